#pragma once
// A one-shot wake-up for a live reader: fired from any thread (a group's
// apply), awaited on the reader's own executor with a deadline.
#include <utility>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>

namespace dstream::runtime {

class wake_signal : public std::enable_shared_from_this<wake_signal> {
public:
    wake_signal(boost::asio::any_io_executor executor,
                std::chrono::steady_clock::time_point deadline)
        : _timer(std::move(executor), deadline) {}

    // Thread-safe: the timer is only touched on its own executor.
    void fire() {
        boost::asio::post(_timer.get_executor(), [self = shared_from_this()] {
            self->_fired = true;
            self->_timer.cancel();
        });
    }

    // Returns when fired or at the deadline; true when fired.
    boost::asio::awaitable<bool> wait() {
        if (!_fired) {
            boost::system::error_code ec;
            co_await _timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        }
        co_return _fired;
    }

private:
    boost::asio::steady_timer _timer;
    bool _fired = false;
};

}  // namespace dstream::runtime
