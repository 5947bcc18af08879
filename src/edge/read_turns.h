#pragma once
// Turns for large read bodies: a body larger than one slice goes out a
// slice per turn, and the node grants one turn at a time, in arrival order,
// each through the back of the I/O threads' queue. Between two slices every
// request already queued (appends first of all) runs, so unpaced catch-up
// readers take what the writers leave instead of crowding them out; with no
// writers the readers still get every cycle. A turn covers only the copy of
// a slice into the socket: a reader whose client is slow waits for its
// socket without holding one.
#include <cstddef>
#include <deque>
#include <memory>
#include <mutex>
#include <utility>

#include <boost/asio/awaitable.hpp>

#include "runtime/wake_signal.h"

namespace dstream::edge {

class read_turns {
public:
    explicit read_turns(std::size_t concurrent) : _free(concurrent) {}

    class turn {
    public:
        explicit turn(read_turns* owner) : _owner(owner) {}
        turn(turn&& o) noexcept : _owner(std::exchange(o._owner, nullptr)) {}
        turn& operator=(turn&&) = delete;
        ~turn() {
            if (_owner != nullptr) _owner->release();
        }

    private:
        read_turns* _owner;
    };

    // Returns with a turn, after everything queued on the I/O threads when
    // it was granted.
    boost::asio::awaitable<turn> take();

private:
    using grant = runtime::wake_signal<bool>;
    void release();

    std::mutex _mutex;
    std::size_t _free;
    std::deque<std::shared_ptr<grant>> _waiting;
};

}  // namespace dstream::edge
