#pragma once
// An SSE reader's standing registration with the group of its stream: the
// group offers it each change's shared read (live_update) as it applies
// it, so the reader does not register again after every event. The queue
// is short: a reader that falls that far behind is dropped by the group and
// reads for itself, as does one whose next read cannot be shared.
//
// A waiting reader is parked as its coroutine's own handler (see
// runtime/await_callback.h): an offer hands the update straight to it, with
// one post and no timer per update. A reader that has a sink (live_sink)
// is not even woken: the offer gives the update to the sink where the offer
// runs, and the reader stays parked. The subscription's one timer ends it
// at its deadline (the end of the reader's connection lifetime).
#include <atomic>
#include <chrono>
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/reusable_queue.h"
#include "runtime/await_callback.h"
#include "service/live_update.h"

namespace dstream::service {

// What a parked reader can do with an update without being resumed (the
// edge sends it to the reader's socket at once). Called on the offering
// thread while the reader is parked, under the subscription's lock, so the
// reader cannot run meanwhile; it must not call the subscription.
class live_sink {
public:
    enum class taken {
        no,     // not taken: the reader is resumed with the update
        whole,  // delivered: the reader stays parked
        part,   // begun: the reader is resumed with the update to finish it
    };
    virtual taken take(const std::shared_ptr<const live_update>& update) = 0;

protected:
    ~live_sink() = default;
};

class live_subscription : public std::enable_shared_from_this<live_subscription> {
public:
    static constexpr std::size_t max_queued = 64;
    using update_ptr = std::shared_ptr<const live_update>;

    // Call start() once made: the subscription ends at `deadline`.
    live_subscription(boost::asio::any_io_executor reader,
                      std::chrono::steady_clock::time_point deadline);
    void start();

    enum class offered { kept, behind, ended };
    // The group's side, any thread. `behind`: the reader is too far behind,
    // the update is not kept and the subscription ends.
    offered offer(const update_ptr& update);
    // No more updates will come (the reader must read for itself).
    void end();

    // The reader's side, on its executor. An update already queued, or nothing.
    update_ptr take_queued();
    // The next update, or nothing once the subscription ended and its queue
    // is drained.
    boost::asio::awaitable<update_ptr> next();
    bool ended() const { return _ended.load(std::memory_order_acquire); }
    bool has_queued() const;
    // The reader's sink, from its next wait on (null: none); the reader's
    // side, which clears it before the sink goes away.
    void set_sink(live_sink* sink);
    // Where the reader's executor runs.
    const boost::asio::execution_context& home() const { return *_home; }

private:
    // Hands the parked reader `update` (nothing: the end), outside the lock.
    void resume_reader(std::unique_lock<std::mutex>& lock, update_ptr update);

    const boost::asio::execution_context* _home;
    boost::asio::steady_timer _deadline;  // touched on the reader's executor only
    mutable std::mutex _mutex;
    // Empty without an allocation: most readers keep up and queue nothing.
    reusable_queue<update_ptr> _queue;
    // Written under the mutex; read without it by the group, which drops
    // ended subscriptions.
    std::atomic<bool> _ended{false};
    live_sink* _sink = nullptr;
    std::optional<runtime::deliver_fn<update_ptr>> _reader;  // parked while the queue is empty
};

}  // namespace dstream::service
