#pragma once
// Runs one engine operation (a coroutine) to its end on the test's thread,
// which runs the io_context meanwhile.
#include <chrono>
#include <exception>
#include <optional>
#include <stdexcept>
#include <utility>

#include <boost/asio/awaitable.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>

namespace dstream::test {

// Keeps the operation's value in `out` (a T need not have a default value).
template <typename T>
boost::asio::awaitable<void> keep_value(boost::asio::awaitable<T> operation,
                                        std::optional<T>& out) {
    out.emplace(co_await std::move(operation));
}

// Throws when the operation does not end within `limit`.
template <typename T>
T run_to_end(boost::asio::io_context& io, boost::asio::awaitable<T> operation,
             std::chrono::seconds limit = std::chrono::seconds(20)) {
    std::optional<T> out;
    boost::asio::co_spawn(io, keep_value(std::move(operation), out), [](std::exception_ptr e) {
        if (e) std::rethrow_exception(e);
    });
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!out && std::chrono::steady_clock::now() < until) {
        io.run_one_for(std::chrono::milliseconds(50));
    }
    if (!out) throw std::runtime_error("the operation did not end");
    return std::move(*out);
}

}  // namespace dstream::test
