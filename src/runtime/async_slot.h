#pragma once
// One value handed from another executor (a group's strand) to a waiting
// coroutine on its own executor.
//
// Why not async_initiate with use_awaitable: GCC 12 miscompiles a capturing
// lambda built in the same expression as a co_await (it frees the captures
// twice; asio issues #1007 and #858). Work is therefore posted by plain code,
// and coroutines only await a timer, whose initiation captures nothing.
#include <utility>
#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <memory>
#include <optional>

namespace dstream::runtime {

template <typename T>
class async_slot : public std::enable_shared_from_this<async_slot<T>> {
public:
    explicit async_slot(boost::asio::any_io_executor executor)
        : _timer(std::move(executor), std::chrono::steady_clock::time_point::max()) {}

    // Any thread, once.
    void deliver(T value) {
        boost::asio::post(_timer.get_executor(),
                          [self = this->shared_from_this(), v = std::move(value)]() mutable {
                              self->_value = std::move(v);
                              self->_timer.cancel();
                          });
    }

    // A callback that delivers its argument here, for APIs that answer
    // through one (build it before the co_await, never inside it).
    auto completion() {
        return [self = this->shared_from_this()](T value) { self->deliver(std::move(value)); };
    }

    // On the slot's executor.
    boost::asio::awaitable<T> take() {
        while (!_value) {
            boost::system::error_code ec;
            co_await _timer.async_wait(boost::asio::redirect_error(boost::asio::use_awaitable, ec));
        }
        co_return std::move(*_value);
    }

private:
    boost::asio::steady_timer _timer;
    std::optional<T> _value;
};

}  // namespace dstream::runtime
