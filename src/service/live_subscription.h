#pragma once
// An SSE reader's standing registration with the group of its stream: the
// group offers it each change's shared read (live_update) as it applies
// it, so the reader does not register again after every event. The queue
// is short: a reader that falls that far behind is dropped by the group and
// reads for itself, as does one whose next read cannot be shared.
#include <chrono>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/steady_timer.hpp>

#include "service/live_update.h"

namespace dstream::service {

class live_subscription : public std::enable_shared_from_this<live_subscription> {
public:
    static constexpr std::size_t max_queued = 64;

    explicit live_subscription(boost::asio::any_io_executor reader);

    enum class offered { kept, behind, ended };
    // The group's side, any thread. `behind`: the reader is too far behind,
    // the update is not kept and the subscription ends.
    offered offer(std::shared_ptr<const live_update> update);
    // No more updates will come (the reader must read for itself).
    void end();

    // The reader's side, on its executor: the next update, or nothing at
    // `deadline` or once the subscription ended and its queue is drained.
    boost::asio::awaitable<std::shared_ptr<const live_update>> next(
        std::chrono::steady_clock::time_point deadline);
    bool ended() const;
    // Whether next() has an update without waiting.
    bool has_queued() const;

private:
    // Under _mutex: wakes the reader if it waits.
    void wake_locked();

    boost::asio::steady_timer _timer;  // touched on the reader's executor only
    mutable std::mutex _mutex;
    std::deque<std::shared_ptr<const live_update>> _queue;
    bool _ended = false;
    bool _waiting = false;
    bool _wake_posted = false;
};

}  // namespace dstream::service
