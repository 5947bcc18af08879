#pragma once
// One value handed from another executor (a group's strand) to a waiting
// coroutine on its own executor.
//
//   auto slot = std::make_shared<async_slot<T>>();
//   post_work(..., slot->completion());      // or a copy of `slot` that delivers
//   T value = co_await take(std::move(slot));
//
// The waiting coroutine is resumed by one post to its executor (its
// handler's associated executor), with no timer: an append waits on one of
// these. take() is a plain function, so the wait costs no coroutine frame
// of its own. While it waits, only the delivering side owns the slot; the
// coroutine does not. A slot whose deliverers are all gone without
// delivering (work dropped at shutdown) then frees the parked coroutine with
// it instead of keeping both alive.
//
// Why work is posted by plain code and not from inside the co_await: GCC 12
// miscompiles a capturing lambda built in the same expression as a co_await
// (it frees the captures twice; asio issues #1007 and #858). The initiation
// below is a named type, built in a plain function.
#include <memory>
#include <mutex>
#include <optional>
#include <utility>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/unique_function.h"

namespace dstream::runtime {

template <typename T>
class async_slot : public std::enable_shared_from_this<async_slot<T>> {
public:
    // Any thread, once.
    void deliver(T value) {
        std::unique_lock lock(_mutex);
        if (!_waiter) {
            _value = std::move(value);
            return;
        }
        resume(lock, std::move(value));
    }

    // A callback that delivers its argument here, for APIs that answer
    // through one (build it before the co_await, never inside it).
    auto completion() {
        return [self = this->shared_from_this()](T value) { self->deliver(std::move(value)); };
    }

    // By the waiting coroutine, once; gives the caller's reference away.
    static boost::asio::awaitable<T> take(std::shared_ptr<async_slot> slot) {
        return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(T)>(
            park{std::move(slot)}, boost::asio::use_awaitable);
    }

private:
    // Parks the coroutine's handler in the slot, or resumes it at once with a
    // value delivered before it got here. It drops its reference to the slot
    // either way, so that the suspended coroutine holds none.
    struct park {
        std::shared_ptr<async_slot> slot;

        template <typename Handler>
        void operator()(Handler&& handler) {
            const std::shared_ptr<async_slot> s = std::move(slot);
            std::unique_lock lock(s->_mutex);
            s->_executor = boost::asio::get_associated_executor(handler);
            auto waiter = [h = std::forward<Handler>(handler)](T value) mutable {
                std::move(h)(std::move(value));
            };
            // A coroutine's handler is kept in the slot without an allocation.
            static_assert(unique_function<void(T)>::template fits_inline<decltype(waiter)>);
            s->_waiter = std::move(waiter);
            if (s->_value) {
                T value = std::move(*s->_value);
                s->_value.reset();
                s->resume(lock, std::move(value));
            }
        }
    };

    void resume(std::unique_lock<std::mutex>& lock, T value) {
        unique_function<void(T)> waiter = std::move(_waiter);
        lock.unlock();
        boost::asio::post(_executor, [waiter = std::move(waiter), v = std::move(value)]() mutable {
            waiter(std::move(v));
        });
    }

    std::mutex _mutex;
    boost::asio::any_io_executor _executor;  // the waiter's
    std::optional<T> _value;
    unique_function<void(T)> _waiter;
};

// Awaits what `slot` is given (see above); the slot is no longer the caller's.
template <typename T>
boost::asio::awaitable<T> take(std::shared_ptr<async_slot<T>> slot) {
    return async_slot<T>::take(std::move(slot));
}

}  // namespace dstream::runtime
