#include "edge/read_turns.h"

#include <chrono>

#include <boost/asio/this_coro.hpp>

namespace dstream::edge {

boost::asio::awaitable<read_turns::turn> read_turns::take() {
    auto waiter = std::make_shared<grant>(co_await boost::asio::this_coro::executor,
                                          std::chrono::steady_clock::time_point::max());
    bool granted = false;
    {
        const std::lock_guard lock(_mutex);
        if (_free > 0 && _waiting.empty()) {
            --_free;
            granted = true;
        } else {
            _waiting.push_back(waiter);
        }
    }
    // A free turn is still taken through the queue, so that a lone reader
    // lets queued requests run between its slices.
    if (granted) waiter->fire(true);
    co_await waiter->wait();
    co_return turn(this);
}

void read_turns::release() {
    std::shared_ptr<grant> next;
    {
        const std::lock_guard lock(_mutex);
        if (_waiting.empty()) {
            ++_free;
            return;
        }
        next = std::move(_waiting.front());
        _waiting.pop_front();
    }
    next->fire(true);  // the turn passes to the next reader without being freed
}

}  // namespace dstream::edge
