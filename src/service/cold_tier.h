#pragma once
// What a group needs to move committed bytes to the cold tier and read them
// back: the object store, the chunk cache, an executor for blocking I/O, and
// the bounds that keep memory independent of the data held.
#include <chrono>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>

#include <boost/asio/any_io_executor.hpp>

#include "base/result.h"
#include "storage/chunk_cache.h"
#include "storage/object_store.h"

namespace dstream::service {

class cold_read_pool;

struct cold_tier {
    storage::object_store* store = nullptr;  // null: everything stays hot (--memory)
    storage::chunk_cache* cache = nullptr;
    boost::asio::any_io_executor io;  // runs blocking object-store calls
    // Runs the streamed catch-up reads of a store that streams (cold_reads.h);
    // null: such reads load their chunks whole, through the cache.
    cold_read_pool* streamed_reads = nullptr;
    // The chunk grid (extensions 4.2): a stream flushes each full 4 MiB chunk.
    std::uint64_t chunk_bytes = 4u << 20;
    // Hot bytes one group may hold before it flushes its largest tails early;
    // while the cold store fails, also the most it holds before it refuses
    // writes with 503 COLD_BACKPRESSURE.
    std::uint64_t group_hot_budget = 16u << 20;
    // After a failed chunk flush the group's next waits this long, doubling
    // with each failure in a row up to the cap (flush_backoff.h).
    std::chrono::milliseconds flush_retry_base{500};
    std::chrono::milliseconds flush_retry_cap{30000};
    // A chunk flush in flight this long says the store is not keeping up
    // (out, its calls still retrying, or slower than the writers): the group
    // then refuses writes past twice its hot budget.
    std::chrono::milliseconds slow_flush{1000};
    // Staged snapshot parts that no publish used are swept after this long.
    std::chrono::seconds staged_part_grace = std::chrono::hours(24);

    bool enabled() const { return store != nullptr; }
};

// A read of cold bytes the store could not give (an outage: the store has
// retried already): 503 COLD_BACKPRESSURE with Retry-After, never a partial
// body. Not COLD_STORE_FAILED, whose 502 the spec's table fixes and which
// tells a client nothing about waiting.
error cold_read_refusal();

// Checkpoints bound replay after a restart (the group's log keeps them);
// none with --memory.
struct checkpointing {
    bool enabled = false;
    // A group checkpoints after this many bytes of log since its last one.
    std::uint64_t every_bytes = 64u << 20;
};

// The deterministic key of a chunk object: a repeated flush rewrites the same
// object, and a crash between writing it and logging it leaves an orphan
// that the start-up sweep removes.
std::string chunk_object_key(std::string_view stream_key, std::uint64_t incarnation,
                             std::uint64_t start, std::uint64_t end);

inline constexpr std::string_view chunk_key_prefix = "chunks/";

// A snapshot body's object key: deterministic in the stream, its incarnation,
// the offset and the digest.
std::string snapshot_object_key(std::string_view stream_key, std::uint64_t incarnation,
                                std::uint64_t offset, std::string_view digest_hex);

inline constexpr std::string_view snapshot_key_prefix = "snapshots/";

// A staged snapshot part (extensions 2.2, Upload in Parts): parts/<stream
// directory>/<incarnation>/<part id>. The incarnation keeps a recreated
// stream's parts apart; the id carries the staging time.
std::string part_object_key(std::string_view stream_key, std::uint64_t incarnation,
                            std::string_view part_id);
// The prefix of every part of a stream, all incarnations.
std::string stream_parts_prefix(std::string_view stream_key);

inline constexpr std::string_view part_key_prefix = "parts/";

// A part object's key taken apart; nothing for a key of another shape.
struct part_object_name {
    std::string_view stream_prefix;  // as stream_parts_prefix() makes it
    std::uint64_t incarnation = 0;
    std::string_view part_id;
};
std::optional<part_object_name> parse_part_object_key(std::string_view key);
// Snapshot bodies of this size and more go to the cold tier (extensions 2.2 note).
inline constexpr std::uint64_t snapshot_inline_limit = 1u << 20;

}  // namespace dstream::service
