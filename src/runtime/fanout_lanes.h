#pragma once
// Strands that spread a group's deliveries to its live readers over the I/O
// threads, one lane on each. The group decides on its own strand who gets which update and
// hands each lane its share in one post; the lanes then make the hand-offs
// (a post per reader), so a stream with a thousand readers does not hold its
// group's strand, or one thread, for all of them. A reader is pinned to one
// lane, so its updates reach it in the order the group made them: the lane
// of its own connection's thread, where the hand-off to it wakes no other
// thread.
#include <atomic>
#include <cstddef>
#include <utility>
#include <vector>

#include <boost/asio/post.hpp>

#include "runtime/compact_strand.h"
#include "runtime/io_threads.h"

namespace dstream::runtime {

class fanout_lanes {
public:
    explicit fanout_lanes(const io_contexts& io) {
        _lanes.reserve(io.size());
        for (std::size_t i = 0; i < io.size(); ++i) _lanes.emplace_back(io.of(i));
    }

    std::size_t size() const { return _lanes.size(); }
    // The lane of a new reader whose executor runs on `home`: one there
    // (round robin when several are), else any one, round robin.
    std::size_t assign(const boost::asio::execution_context& home) {
        const std::size_t start = _next.fetch_add(1, std::memory_order_relaxed) % _lanes.size();
        for (std::size_t k = 0; k < _lanes.size(); ++k) {
            const std::size_t i = (start + k) % _lanes.size();
            if (&_lanes[i].query(boost::asio::execution::context) == &home) return i;
        }
        return start;
    }

    template <typename Function>
    void post(std::size_t lane, Function&& f) {
        boost::asio::post(_lanes[lane], std::forward<Function>(f));
    }

private:
    std::vector<compact_strand> _lanes;
    std::atomic<std::size_t> _next{0};
};

}  // namespace dstream::runtime
