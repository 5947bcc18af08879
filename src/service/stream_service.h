#pragma once
// The seam between the HTTP edge and the stream engine: the edge sees only
// these protocol-level operations, never groups, logs or storage.
#include <chrono>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>

#include "protocol/offset.h"
#include "state/apply_result.h"
#include "state/command.h"
#include "storage/hot_bytes.h"
#include "storage/object_file.h"

namespace dstream::service {

struct read_request {
    std::string key;
    protocol::read_start start;
    std::uint64_t max_bytes = 0;  // 0 reads metadata only (HEAD)
    // Stop at a message boundary (a JSON stream rendered as a JSON array).
    bool whole_messages = false;
    bool renews_ttl = true;  // HEAD does not renew a sliding TTL
    std::optional<std::uint64_t> if_incarnation;
    // The read must reflect every write acknowledged before it (extensions
    // 9.2): the replica first applies everything the group's leader had
    // committed when asked, as the leader proved with a majority (Raft's read
    // index); a node that cannot answers NO_LEADER.
    bool linearizable = false;
    // The caller sends the bytes as they are: bytes in cold chunks may stay
    // in their files (stream_view::files) or come from the store as they are
    // sent (stream_view::streamed) instead of being loaded.
    bool cold_as_files = false;

    bool operator==(const read_request&) const = default;
};

// The cold bytes of a catch-up read that the store sends on as they arrive
// (chunks in S3 that the chunk cache does not hold): the read holds a bounded
// buffer of them, never a whole chunk. Nothing is asked of the store before
// the first next(); dropping the stream ends its reads.
class cold_stream {
public:
    virtual ~cold_stream() = default;
    virtual std::uint64_t size() const = 0;
    // The next bytes, in order; none at the end. The first call starts the
    // reads and returns once the store has answered with the range asked:
    // its error is then the refusal to answer with (503 COLD_BACKPRESSURE).
    // An error after that means the bytes cannot be completed.
    virtual boost::asio::awaitable<result<std::vector<byte_slice>>> next() = 0;
};

// A consistent view of one stream at one moment, and the bytes read from it.
struct stream_view {
    std::optional<error> refusal;
    std::uint64_t incarnation = 0;
    std::string content_type;
    bool json = false;
    protocol::expiry_config expiry;
    bool stream_closed = false;
    std::uint64_t tail = 0;
    std::uint64_t start = 0;  // first offset returned
    std::uint64_t next = 0;   // offset after the last byte returned
    // With read_request::cold_as_files, the bytes of [start, next) that lie
    // in cold chunks come first, as files or streamed from the store (never
    // both); `data` holds the rest.
    std::vector<storage::file_slice> files;
    std::shared_ptr<cold_stream> streamed;
    std::vector<byte_slice> data;

    // extensions 2.4: the latest snapshot and the earliest retained offset.
    std::optional<std::uint64_t> snapshot_offset;
    std::string snapshot_digest;
    std::uint64_t retained = 0;
    std::optional<std::uint64_t> previous_incarnation;
    std::uint64_t inherited_offset = 0;

    bool up_to_date() const { return next == tail; }
    // Stream-Closed belongs on a read that reaches the tail of a closed stream.
    bool reached_closed_tail() const { return stream_closed && next == tail; }
};

// The latest snapshot of a stream and the bytes asked of it (extensions 2.5).
struct snapshot_view {
    std::optional<error> refusal;
    std::uint64_t incarnation = 0;  // 0: the stream does not exist
    std::uint64_t tail = 0;
    std::uint64_t offset = 0;
    std::string content_type;
    std::string digest;  // lowercase hex
    std::uint64_t size = 0;
    std::uint64_t first = 0;  // the range of the body served, clamped to it
    std::uint64_t length = 0;
    std::vector<byte_slice> body;  // [first, first + length) of the body
};

// What /bootstrap returns (extensions 3): the snapshot (or none) and the
// updates after it that are still hot, as one part per message for JSON.
struct bootstrap_view {
    std::optional<error> refusal;
    std::uint64_t incarnation = 0;
    bool has_snapshot = false;
    snapshot_view snapshot;  // the whole body when has_snapshot
    std::string content_type;
    bool json = false;
    std::uint64_t start = 0;  // the snapshot point S
    std::uint64_t next = 0;   // Stream-Next-Offset
    std::uint64_t tail = 0;
    std::vector<byte_slice> updates;  // [start, next)
};

// A create that forks (base protocol 4.2), as the request names it; the
// engine resolves the fork point against the source.
struct fork_request {
    std::string source_key;
    std::optional<std::uint64_t> offset;  // default: the source's tail
    std::uint64_t sub_offset = 0;         // messages (JSON) or bytes past `offset`
    bool content_type_given = false;      // otherwise the source's is taken
};

// A snapshot part on its way in (extensions 2.2, Upload in Parts): it counts
// against its stream's staging bounds from its admission until it is staged
// or this handle is dropped.
class part_upload {
public:
    virtual ~part_upload() = default;
};

// The bound a part passed: answered 429 STAGED_PARTS_LIMIT naming it.
struct staging_bound {
    enum class kind { parts, bytes } what = kind::parts;
    std::uint64_t value = 0;
};

// The answer to a part or a discard of the staged parts.
struct parts_answer {
    std::optional<error> refusal;
    std::uint64_t incarnation = 0;  // the stream that answered; 0: none
    std::string part_id;            // the part staged
    std::optional<staging_bound> exceeded;
};

struct part_admission {
    parts_answer answer;  // a refusal, or the stream it was admitted for
    std::unique_ptr<part_upload> upload;
};

// PUT {stream}/snapshot/{offset} with Stream-Snapshot-Parts: the assembled
// snapshot's publish, its shape already checked.
struct parts_commit {
    std::string key;
    std::optional<std::uint64_t> if_incarnation;
    std::uint64_t offset = 0;
    std::string content_type;
    protocol::body_digest digest{};
    std::vector<std::string> part_ids;
};

// Where the group of a stream stands on this node, as far as it knows: what
// the edge routes a request by (extensions 5.7) before it reads the body.
struct placement {
    std::uint32_t group = 0;
    bool hosted = true;        // a replica of the group runs on this node
    bool leads = true;         // this node leads the group
    std::uint64_t leader = 0;  // the leader this node knows; 0: none
    std::uint64_t term = 0;    // of that leader
};

class live_update;
class live_subscription;

class stream_service {
public:
    virtual ~stream_service() = default;

    // Coroutine arguments are references to the caller's named objects (see
    // runtime/await_callback.h for the GCC 12 bug this avoids).

    // Proposes a write (create, append, close, delete), taking `body` by
    // moving from it, and answers once it is durable and applied.
    virtual boost::asio::awaitable<state::apply_result> write(state::command_body& body) = 0;

    // Creates the fork `create.key` of `fork`'s source; `create` carries the
    // request's own settings (expiry, closure, initial body).
    virtual boost::asio::awaitable<state::apply_result> create_fork(state::create_stream& create,
                                                                    const fork_request& fork) = 0;

    virtual boost::asio::awaitable<stream_view> read(const read_request& request) = 0;

    // The placement of `key`'s group; any thread, without waiting.
    virtual placement place(std::string_view key) const = 0;

    // extensions 5.5: the answer of a producer write with Stream-Incarnation
    // decided from its headers alone (a repeat or a key conflict), or nothing.
    virtual boost::asio::awaitable<std::optional<state::apply_result>> answer_before_body(
        const state::append& headers) = 0;

    // The snapshot published at `offset`, with `length` bytes of its body from
    // `first` (clamped to the body). 404 SNAPSHOT_NOT_FOUND names the stream's
    // incarnation when the stream exists.
    virtual boost::asio::awaitable<snapshot_view> read_snapshot(const std::string& key,
                                                                std::uint64_t offset,
                                                                std::uint64_t first,
                                                                std::uint64_t length) = 0;

    virtual boost::asio::awaitable<bootstrap_view> bootstrap(const std::string& key,
                                                             std::uint64_t max_update_bytes) = 0;

    // extensions 2.2, Upload in Parts. Without a cold store every call answers
    // 501 NO_COLD_STORE and max_snapshot_bytes() is nothing.
    virtual std::optional<std::uint64_t> max_snapshot_bytes() const = 0;
    // Decides a part from its head: 404, 412, 429 or an admitted upload.
    virtual boost::asio::awaitable<part_admission> admit_part(
        const std::string& key, const std::optional<std::uint64_t>& if_incarnation,
        std::uint64_t declared_bytes) = 0;
    // Stages `body` (moved from); `upload` is the head's admission, or null to
    // admit the part now.
    virtual boost::asio::awaitable<parts_answer> stage_part(
        const std::string& key, const std::optional<std::uint64_t>& if_incarnation,
        std::string& body, std::unique_ptr<part_upload>& upload) = 0;
    virtual boost::asio::awaitable<parts_answer> discard_parts(
        const std::string& key, const std::optional<std::uint64_t>& if_incarnation) = 0;
    // The answer is a publish's answer, or a refusal of the parts.
    virtual boost::asio::awaitable<state::apply_result> commit_parts(
        const parts_commit& commit) = 0;

    // Returns once the stream `request.key` of incarnation
    // `*request.if_incarnation` has bytes past `request.start` (a position),
    // is closed, gone or replaced, at `deadline`, or when live reads end.
    // When the change can be answered with the read `request` asks for (up
    // to the tail, all of it hot), that read comes with it, made once for
    // every reader waiting at that position; otherwise the reader reads.
    virtual boost::asio::awaitable<std::shared_ptr<const live_update>> wait(
        const read_request& request, std::chrono::steady_clock::time_point deadline) = 0;

    // An SSE reader's standing registration from `request.start` (a
    // position at the tail it read), woken on `reader`, ended at `deadline`
    // at the latest (live_subscription.h).
    virtual std::shared_ptr<live_subscription> follow(
        const read_request& request, const boost::asio::any_io_executor& reader,
        std::chrono::steady_clock::time_point deadline) = 0;

    // Shutdown: every wait returns now and later ones at once, so that a
    // long-poll answers as at its timeout and an SSE reader ends its body.
    // Any thread.
    virtual void end_live_reads() = 0;
    virtual bool live_reads_ended() const = 0;
};

}  // namespace dstream::service
