#pragma once
// A one-shot wake-up for a live reader, with what woke it: fired from any
// thread (a group's apply), awaited on the reader's own executor with a
// deadline.
#include <memory>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>

namespace dstream::runtime {

template <typename T>
class wake_signal : public std::enable_shared_from_this<wake_signal<T>> {
public:
    wake_signal(boost::asio::any_io_executor executor,
                std::chrono::steady_clock::time_point deadline)
        : _timer(std::move(executor), deadline) {}

    // Thread-safe: the timer is only touched on its own executor. The first
    // firing wins.
    void fire(T value) {
        boost::asio::post(_timer.get_executor(),
                          [self = this->shared_from_this(), v = std::move(value)]() mutable {
                              if (self->_fired) return;
                              self->_fired = true;
                              self->_value = std::move(v);
                              self->_timer.cancel();
                          });
    }

    // Returns what it was fired with, or T{} at the deadline.
    boost::asio::awaitable<T> wait() {
        if (!_fired) {
            boost::system::error_code ec;
            co_await _timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        }
        co_return std::move(_value);
    }

private:
    boost::asio::steady_timer _timer;
    bool _fired = false;
    T _value{};
};

}  // namespace dstream::runtime
