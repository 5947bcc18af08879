#pragma once
// Header names of the protocol and the parsers of request headers.
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "edge/message.h"
#include "state/command.h"

namespace dstream::edge::hdr {

inline constexpr char ursula_protocol[] = "Ursula-Protocol";
inline constexpr char ursula_cluster_id[] = "Ursula-Cluster-Id";
inline constexpr char ursula_max_request_bytes[] = "Ursula-Max-Request-Bytes";
inline constexpr char ursula_max_snapshot_bytes[] = "Ursula-Max-Snapshot-Bytes";
inline constexpr char ursula_max_staged_parts[] = "Ursula-Max-Staged-Parts";
inline constexpr char ursula_max_staged_bytes[] = "Ursula-Max-Staged-Bytes";
// extensions 5.7 note: where a routing answer points.
inline constexpr char raft_leader_id[] = "x-ursula-raft-leader-id";
inline constexpr char raft_group[] = "x-ursula-raft-group";
inline constexpr char raft_term[] = "x-ursula-raft-term";
inline constexpr char cross_origin_resource_policy[] = "Cross-Origin-Resource-Policy";
inline constexpr char stream_next_offset[] = "Stream-Next-Offset";
inline constexpr char stream_offset[] = "Stream-Offset";
inline constexpr char stream_up_to_date[] = "Stream-Up-To-Date";
inline constexpr char stream_closed[] = "Stream-Closed";
inline constexpr char stream_cursor[] = "Stream-Cursor";
inline constexpr char stream_seq[] = "Stream-Seq";
inline constexpr char stream_last_seq[] = "Stream-Last-Seq";
inline constexpr char stream_ttl[] = "Stream-TTL";
inline constexpr char stream_expires_at[] = "Stream-Expires-At";
inline constexpr char stream_incarnation[] = "Stream-Incarnation";
inline constexpr char stream_retained_offset[] = "Stream-Retained-Offset";
inline constexpr char stream_snapshot_offset[] = "Stream-Snapshot-Offset";
inline constexpr char stream_snapshot_digest[] = "Stream-Snapshot-Digest";
inline constexpr char stream_snapshot_parts[] = "Stream-Snapshot-Parts";
inline constexpr char stream_snapshot_part[] = "Stream-Snapshot-Part";
inline constexpr char stream_immutable[] = "Stream-Immutable";
inline constexpr char stream_previous_incarnation[] = "Stream-Previous-Incarnation";
inline constexpr char stream_inherited_offset[] = "Stream-Inherited-Offset";
inline constexpr char stream_forked_from[] = "Stream-Forked-From";
inline constexpr char stream_fork_offset[] = "Stream-Fork-Offset";
inline constexpr char stream_fork_sub_offset[] = "Stream-Fork-Sub-Offset";
inline constexpr char stream_sse_data_encoding[] = "Stream-SSE-Data-Encoding";
inline constexpr char stream_data_content_type[] = "Stream-Data-Content-Type";
inline constexpr char producer_id[] = "Producer-Id";
inline constexpr char producer_epoch[] = "Producer-Epoch";
inline constexpr char producer_seq[] = "Producer-Seq";
inline constexpr char producer_expected_seq[] = "Producer-Expected-Seq";
inline constexpr char producer_outcome[] = "Producer-Outcome";
inline constexpr char producer_digest[] = "Producer-Digest";
inline constexpr char producer_closed_epoch[] = "Producer-Closed-Epoch";
inline constexpr char producer_closed_seq[] = "Producer-Closed-Seq";
inline constexpr char producer_received_seq[] = "Producer-Received-Seq";

inline constexpr char exposed_headers[] =
    "x-ursula-raft-leader-id, x-ursula-raft-group, x-ursula-raft-term, "
    "Stream-Next-Offset, Stream-Offset, Stream-Cursor, Stream-Up-To-Date, Stream-Closed, "
    "Stream-TTL, Stream-Expires-At, Stream-Incarnation, Stream-Previous-Incarnation, "
    "Stream-Inherited-Offset, Stream-Retained-Offset, Stream-Last-Seq, "
    "Stream-Snapshot-Offset, Stream-Snapshot-Digest, Stream-Immutable, Accept-Ranges, "
    "Content-Range, "
    "Stream-SSE-Data-Encoding, Stream-Data-Content-Type, Producer-Epoch, Producer-Seq, "
    "Producer-Expected-Seq, Producer-Received-Seq, Producer-Outcome, Producer-Closed-Epoch, "
    "Producer-Closed-Seq, Ursula-Protocol, Ursula-Cluster-Id, "
    "Ursula-Max-Request-Bytes, Ursula-Max-Snapshot-Bytes, Stream-Snapshot-Part, "
    "Ursula-Max-Staged-Parts, Ursula-Max-Staged-Bytes, ETag, Location, Content-Type";

inline constexpr char allowed_request_headers[] =
    "Content-Type, Stream-Seq, Stream-TTL, Stream-Expires-At, Stream-Closed, Stream-Incarnation, "
    "Stream-Forked-From, Stream-Fork-Offset, Stream-Fork-Sub-Offset, Producer-Id, "
    "Producer-Epoch, Producer-Seq, Producer-Digest, Stream-Snapshot-Parts, Stream-Snapshot-Digest, "
    "If-None-Match, Authorization";

}  // namespace dstream::edge::hdr

namespace dstream::edge {

// The value of a header that may appear at most once; a repeat is a 400.
result<std::optional<std::string_view>> single_header(const request& req, std::string_view name);

// Stream-Closed counts only when it is exactly `true`, any case (base protocol 4.1).
bool stream_closed_requested(const request& req);

// Stream-Incarnation as a request precondition (extensions 2.4).
result<std::optional<std::uint64_t>> incarnation_precondition(const request& req);

// Producer-Id / -Epoch / -Seq: all three or none (base protocol 5.2.1).
result<std::optional<state::producer_key>> producer_headers(const request& req);

bool has_producer_headers(const request& req);

}  // namespace dstream::edge
