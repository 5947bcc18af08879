#pragma once
// The one source of error codes and their HTTP statuses (extensions Section 11).
// Each code also says whether it proves that a write was refused (Section 11.1).
#include <cstdint>
#include <string_view>

namespace dstream::protocol {

// X(enumerator, "WIRE_CODE", http_status, proves_refusal)
// Add new codes at the end only: the command codec stores an enumerator's
// number (a write's content fault), so the numbers never change.
#define DSTREAM_ERROR_CODES(X)                                             \
    X(invalid_request, "INVALID_REQUEST", 400, true)                       \
    X(invalid_header, "INVALID_HEADER", 400, true)                         \
    X(invalid_query, "INVALID_QUERY", 400, true)                           \
    X(invalid_offset, "INVALID_OFFSET", 400, true)                         \
    X(query_not_accepted, "QUERY_NOT_ACCEPTED", 400, true)                 \
    X(invalid_resource, "INVALID_RESOURCE", 400, true)                     \
    X(invalid_bucket_id, "INVALID_BUCKET_ID", 400, true)                   \
    X(invalid_stream_id, "INVALID_STREAM_ID", 400, true)                   \
    X(invalid_producer, "INVALID_PRODUCER", 400, true)                     \
    X(producer_digest_mismatch, "PRODUCER_DIGEST_MISMATCH", 400, true)     \
    X(missing_content_type, "MISSING_CONTENT_TYPE", 400, true)             \
    X(empty_append, "EMPTY_APPEND", 400, true)                             \
    X(invalid_record_boundaries, "INVALID_RECORD_BOUNDARIES", 400, true)   \
    X(not_json_boundary, "NOT_JSON_BOUNDARY", 400, true)                   \
    X(invalid_retention, "INVALID_RETENTION", 400, true)                   \
    X(invalid_snapshot, "INVALID_SNAPSHOT", 400, true)                     \
    X(invalid_parts_commit, "INVALID_PARTS_COMMIT", 400, true)             \
    X(unknown_part, "UNKNOWN_PART", 400, true)                             \
    X(snapshot_digest_mismatch, "SNAPSHOT_DIGEST_MISMATCH", 400, true)     \
    X(body_unreadable, "BODY_UNREADABLE", 400, true)                       \
    X(unsupported, "UNSUPPORTED", 400, true)                               \
    X(producer_epoch_closed, "PRODUCER_EPOCH_CLOSED", 403, true)           \
    X(producer_epoch_stale, "PRODUCER_EPOCH_STALE", 403, true)             \
    X(producer_expired, "PRODUCER_EXPIRED", 403, true)                     \
    X(producer_key_conflict, "PRODUCER_KEY_CONFLICT", 403, true)           \
    X(stream_not_found, "STREAM_NOT_FOUND", 404, true)                     \
    X(bucket_not_found, "BUCKET_NOT_FOUND", 404, true)                     \
    X(snapshot_not_found, "SNAPSHOT_NOT_FOUND", 404, true)                 \
    X(not_found, "NOT_FOUND", 404, true)                                   \
    X(method_not_allowed, "METHOD_NOT_ALLOWED", 405, true)                 \
    X(stream_closed, "STREAM_CLOSED", 409, true)                           \
    X(stream_seq_conflict, "STREAM_SEQ_CONFLICT", 409, true)               \
    X(content_type_mismatch, "CONTENT_TYPE_MISMATCH", 409, true)           \
    X(stream_already_exists_conflict, "STREAM_ALREADY_EXISTS_CONFLICT", 409, true) \
    X(producer_seq_conflict, "PRODUCER_SEQ_CONFLICT", 409, true)           \
    X(snapshot_conflict, "SNAPSHOT_CONFLICT", 409, true)                   \
    X(stream_gone, "STREAM_GONE", 410, true)                               \
    X(incarnation_mismatch, "INCARNATION_MISMATCH", 412, true)             \
    X(request_too_large, "REQUEST_TOO_LARGE", 413, true)                   \
    X(snapshot_too_large, "SNAPSHOT_TOO_LARGE", 413, true)                 \
    X(offset_out_of_range, "OFFSET_OUT_OF_RANGE", 416, true)               \
    X(range_not_satisfiable, "RANGE_NOT_SATISFIABLE", 416, true)           \
    X(producer_limit, "PRODUCER_LIMIT", 429, true)                         \
    X(staged_parts_limit, "STAGED_PARTS_LIMIT", 429, true)                 \
    X(internal, "INTERNAL", 500, false)                                    \
    X(no_cold_store, "NO_COLD_STORE", 501, true)                           \
    X(cold_store_failed, "COLD_STORE_FAILED", 502, false)                  \
    X(no_leader, "NO_LEADER", 503, true)                                   \
    X(wal_disk_pressure, "WAL_DISK_PRESSURE", 503, true)                   \
    X(ingress_body_bytes_limit_reached, "INGRESS_BODY_BYTES_LIMIT_REACHED", 503, true) \
    X(live_read_backpressure, "LIVE_READ_BACKPRESSURE", 503, false)        \
    X(apply_stopped, "APPLY_STOPPED", 503, true)                           \
    X(outcome_unknown, "OUTCOME_UNKNOWN", 503, false)                     \
    X(json_boundary_unverified, "JSON_BOUNDARY_UNVERIFIED", 503, true)    \
    /* base protocol 4.2: a deleted stream kept for its forks (a code of ours) */ \
    X(stream_soft_deleted, "STREAM_SOFT_DELETED", 409, true)              \
    X(snapshot_commits_busy, "SNAPSHOT_COMMITS_BUSY", 503, true)           \
    X(snapshot_commit_in_progress, "SNAPSHOT_COMMIT_IN_PROGRESS", 503, false) \
    /* refused before the proposal: the cold store is failing and the group  */ \
    /* holds its hot budget; also a cold read the failing store cannot serve */ \
    X(cold_backpressure, "COLD_BACKPRESSURE", 503, true)                   \
    /* a group's leader refused a proposal before writing it (raft_group_log); */ \
    /* new codes go last: a content fault's code is in the log by its number  */ \
    X(raft_log_pressure, "RAFT_LOG_PRESSURE", 503, true)                   \
    X(raft_uncommitted_backpressure, "RAFT_UNCOMMITTED_BACKPRESSURE", 503, true) \
    /* the admin listener's bearer token is missing or wrong (--admin-token-file) */ \
    X(invalid_credential, "INVALID_CREDENTIAL", 401, true)

enum class error_code : std::uint8_t {
#define DSTREAM_X(name, wire, status, refusal) name,
    DSTREAM_ERROR_CODES(DSTREAM_X)
#undef DSTREAM_X
};

inline constexpr std::uint8_t error_code_count = 0
#define DSTREAM_X(name, wire, status, refusal) +1
    DSTREAM_ERROR_CODES(DSTREAM_X)
#undef DSTREAM_X
    ;

// The stable wire code, e.g. "STREAM_NOT_FOUND".
std::string_view wire_code(error_code code);
// The HTTP status the code is answered with.
unsigned http_status(error_code code);
// Section 11.1: true when an answer with this code proves the write applied nothing.
bool proves_refusal(error_code code);

}  // namespace dstream::protocol
