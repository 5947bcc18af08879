#pragma once
// One stream as the state machine holds it.
#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "protocol/expiry.h"
#include "protocol/producer.h"
#include "state/command.h"
#include "storage/hot_bytes.h"

namespace dstream::state {

// A range of the stream's bytes held as an immutable object in the cold tier.
struct chunk_ref {
    std::uint64_t start = 0;
    std::uint64_t end = 0;
    std::string object_key;
};

// The latest visible snapshot (extensions 2.2): inline below 1 MiB, a
// cold-tier object at or above it.
struct snapshot_ref {
    std::uint64_t offset = 0;
    std::string content_type;
    protocol::body_digest digest{};
    std::uint64_t size = 0;
    std::string inline_body;
    std::string object_key;  // empty when inline
};

struct stream {
    std::string content_type;
    bool json = false;  // application/json: stored as JSON message text
    protocol::expiry_config expiry;
    std::uint64_t incarnation = 0;
    protocol::unix_ms created_at_ms = 0;
    // Renewed by every applied write; the sliding TTL counts from the later of
    // this and the node's last read (stream_access in the engine).
    protocol::unix_ms last_write_ms = 0;
    bool closed = false;
    std::optional<std::string> last_stream_seq;
    std::unordered_map<std::string, protocol::producer_record> producers;
    // The highest epoch of any producer state the stream dropped (extensions 5.4).
    std::optional<std::uint64_t> epoch_floor;
    std::optional<snapshot_ref> snapshot;
    // After a history rewrite (extensions 2.4): the token before it and the
    // offset below which the bytes are the same under both tokens.
    std::optional<std::uint64_t> previous_incarnation;
    std::uint64_t inherited_offset = 0;
    // The earliest retained offset (extensions 2.2, Retention Effect).
    std::uint64_t retained = 0;
    // base protocol 4.2: a fork reads below origin->offset through its source.
    std::optional<fork_origin> origin;
    // The forks that read through this stream, by reference (fork_origin).
    // While one remains, a delete or an expiry only retires the stream (soft
    // delete). Ordered, so that checkpoints are deterministic.
    std::map<std::uint64_t, std::string> forks;
    // Cold chunks cover [first_offset(), cold_end()) contiguously; hot bytes
    // cover at least [cold_end(), tail()).
    std::vector<chunk_ref> chunks;
    storage::hot_bytes bytes;

    std::uint64_t tail() const { return bytes.end_offset(); }
    // The first offset of the stream's own bytes (a fork's fork point).
    std::uint64_t own_start() const { return origin ? origin->offset : 0; }
    std::uint64_t first_offset() const { return std::max(retained, own_start()); }
    std::uint64_t cold_end() const { return chunks.empty() ? first_offset() : chunks.back().end; }
    std::uint64_t hot_bytes_held() const { return tail() - cold_end(); }
};

}  // namespace dstream::state
