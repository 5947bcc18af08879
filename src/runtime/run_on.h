#pragma once
// Runs a function on another executor (a group's strand) and resumes the
// calling coroutine on its own executor with the result. Cross-group and
// edge-to-group work goes by these messages, never by shared mutable state.
#include <utility>
// <utility> before Asio's coroutine headers: GCC 12 with Boost 1.74 needs it.
#include <boost/asio/async_result.hpp>
#include <boost/asio/associated_executor.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <type_traits>

namespace dstream::runtime {

// Posts the result to the handler's own executor: completing inline would
// resume the caller's coroutine on the group's thread.
template <typename Handler, typename Value>
void complete_on_own_executor(Handler&& handler, Value&& value) {
    auto ex = boost::asio::get_associated_executor(handler);
    boost::asio::post(ex, [h = std::forward<Handler>(handler),
                           v = std::forward<Value>(value)]() mutable { h(std::move(v)); });
}

// Not a coroutine itself: `f` moves into the initiation before anything
// suspends (GCC 12 mishandles by-value coroutine parameters built from temporaries).
template <typename Executor, typename F>
auto run_on(Executor executor, F f) -> boost::asio::awaitable<std::invoke_result_t<F&>> {
    using value_type = std::invoke_result_t<F&>;
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&, void(value_type)>(
        [executor, f = std::move(f)](auto handler) mutable {
            boost::asio::post(executor, [f = std::move(f), h = std::move(handler)]() mutable {
                complete_on_own_executor(std::move(h), f());
            });
        },
        boost::asio::use_awaitable);
}

}  // namespace dstream::runtime
