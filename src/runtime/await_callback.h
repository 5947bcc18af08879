#pragma once
// A coroutine waits for a value that other work (a group's strand, the cold
// tier's I/O pool) hands it through a callback:
//
//   asio::awaitable<T> fetch() {  // a plain function, see below
//       return runtime::await_callback<T>([...](runtime::deliver_fn<T> done) {
//           asio::post(strand, [..., done = std::move(done)]() mutable { done(value); });
//       });
//   }
//   T value = co_await fetch();
//
// `start` runs once the coroutine has suspended in that co_await, and gets
// `done`. Any thread calls `done` once; the coroutine then resumes on its
// own executor (its handler's associated executor) by one post, with no
// timer and nothing shared: `done` holds the coroutine's handler itself. A
// `done` destroyed without being called (work dropped at shutdown) frees
// the suspended coroutine's frames with it.
//
// Why `start` is built in a plain function and never inside a co_await
// expression: GCC 12 miscompiles a capturing lambda built in the same
// expression as a co_await (it frees the captures twice; asio issues #1007
// and #858).
#include <cstddef>
#include <memory>
#include <type_traits>
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/async_result.hpp>
#include <boost/asio/awaitable.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>

#include "base/unique_function.h"

namespace dstream::runtime {

template <typename T>
using deliver_fn = unique_function<void(T)>;

namespace detail {

// Resumes the coroutine whose handler it holds, on the handler's executor.
template <typename T, typename Handler>
class resumer {
public:
    explicit resumer(Handler handler) : _handler(std::move(handler)) {}

    void operator()(T&& value) {
        const auto executor = boost::asio::get_associated_executor(_handler);
        if constexpr (sizeof(T) <= boxed_above) {
            boost::asio::post(executor, [h = std::move(_handler), v = std::move(value)]() mutable {
                std::move(h)(std::move(v));
            });
        } else {
            // Asio moves the posted function several times on its way: a
            // large value (a write's answer, hundreds of bytes of strings
            // and optionals) travels in a box, moved once into it.
            boost::asio::post(executor, [h = std::move(_handler),
                                         v = std::make_unique<T>(std::move(value))]() mutable {
                std::move(h)(std::move(*v));
            });
        }
    }

private:
    static constexpr std::size_t boxed_above = 64;
    Handler _handler;
};

template <typename T, typename Start>
struct start_with_resumer {
    Start start;

    template <typename Handler>
    void operator()(Handler&& handler) {
        using resume = resumer<T, std::decay_t<Handler>>;
        // A coroutine's handler travels inside `done` without an allocation.
        static_assert(deliver_fn<T>::template fits_inline<resume>);
        std::move(start)(deliver_fn<T>(resume(std::forward<Handler>(handler))));
    }
};

}  // namespace detail

template <typename T, typename Start>
boost::asio::awaitable<T> await_callback(Start start) {
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(T)>(
        detail::start_with_resumer<T, Start>{std::move(start)}, boost::asio::use_awaitable);
}

}  // namespace dstream::runtime
