#include "service/live_subscription.h"

#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace dstream::service {

live_subscription::live_subscription(boost::asio::any_io_executor reader)
    : _timer(std::move(reader)) {}

live_subscription::offered live_subscription::offer(std::shared_ptr<const live_update> update) {
    const std::lock_guard lock(_mutex);
    if (_ended) return offered::ended;
    if (_queue.size() >= max_queued) {
        _ended = true;
        wake_locked();
        return offered::behind;
    }
    _queue.push_back(std::move(update));
    wake_locked();
    return offered::kept;
}

void live_subscription::end() {
    const std::lock_guard lock(_mutex);
    _ended = true;
    wake_locked();
}

bool live_subscription::ended() const {
    const std::lock_guard lock(_mutex);
    return _ended;
}

bool live_subscription::has_queued() const {
    const std::lock_guard lock(_mutex);
    return !_queue.empty();
}

void live_subscription::wake_locked() {
    if (!_waiting || _wake_posted) return;
    _wake_posted = true;
    boost::asio::post(_timer.get_executor(),
                      [self = shared_from_this()] { self->_timer.cancel(); });
}

boost::asio::awaitable<std::shared_ptr<const live_update>> live_subscription::next(
    std::chrono::steady_clock::time_point deadline) {
    while (true) {
        {
            const std::lock_guard lock(_mutex);
            _waiting = false;
            _wake_posted = false;
            if (!_queue.empty()) {
                std::shared_ptr<const live_update> update = std::move(_queue.front());
                _queue.pop_front();
                co_return update;
            }
            if (_ended || std::chrono::steady_clock::now() >= deadline) co_return nullptr;
            _waiting = true;
        }
        _timer.expires_at(deadline);
        boost::system::error_code ec;
        co_await _timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
    }
}

}  // namespace dstream::service
