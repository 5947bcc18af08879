#pragma once
// A bounded buffer between the thread that produces a streamed read's bytes
// (a store's ranged GET, as curl delivers them) and the coroutine that sends
// them to a client (as a coroutine: service/cold_reads wraps take() with
// runtime::await_callback; storage itself needs no coroutines, which the
// fuzz build's compiler does not give Boost.Asio). The producer blocks while `capacity` bytes wait, so a
// read holds about twice that at most (what waits, and the batch the
// consumer is sending), however long its range: a slow reader slows the GET
// down instead of filling memory.
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <mutex>
#include <optional>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"
#include "base/unique_function.h"
#include "storage/hot_bytes.h"
#include "storage/object_store.h"

namespace dstream::storage {

class byte_pipe final : public range_sink {
public:
    using batch = std::vector<byte_slice>;
    using deliver = unique_function<void(result<batch>)>;

    explicit byte_pipe(std::size_t capacity) : _capacity(capacity) {}

    // The producer's side, one thread at a time. Both block while the pipe
    // is full and return false once the consumer is gone.
    // Copies `bytes` in.
    bool write(std::string_view bytes) override;
    // Puts in bytes already held elsewhere (a cached chunk) without a copy.
    // A slice larger than the capacity goes in alone.
    bool push(byte_slice slice);
    // The bytes end here: all of them, or short of the range with `e`.
    void finish();
    void fail(error e);
    // The consumer is gone: nothing more need be produced.
    bool abandoned();

    // The consumer's side, one take at a time. `done` gets all the bytes
    // that wait, in order, once there are any (on the producer's thread when
    // they came later): an empty batch after finish(), the error after
    // fail() (once what came before it is taken).
    void take(deliver done);
    // The consumer is gone: what waits is dropped, and the producer's writes
    // return false from now on (a blocked one at once).
    void abandon();

private:
    enum class phase { open, finished, failed, abandoned };

    bool has_news() const { return !_queue.empty() || _phase != phase::open; }
    result<batch> take_queued();
    // Hands what there is to a consumer waiting in take(), outside the lock.
    void wake_consumer(std::unique_lock<std::mutex>& lock);

    std::mutex _mutex;
    std::condition_variable _space;
    const std::size_t _capacity;
    std::size_t _queued_bytes = 0;
    std::deque<byte_slice> _queue;
    phase _phase = phase::open;
    std::optional<error> _error;
    deliver _waiting;  // the consumer's take() while nothing waits
};

}  // namespace dstream::storage
