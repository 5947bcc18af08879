#pragma once
// Virtual time and the events that happen on it. Events at the same
// millisecond run in the order they were scheduled, so a run depends only
// on its seed.
#include <cstdint>
#include <algorithm>
#include <functional>
#include <vector>

namespace dstream::sim {

class event_queue {
public:
    using action = std::function<void()>;

    std::uint64_t now() const { return _now; }
    // `when` in the past runs at the next step, now.
    void at(std::uint64_t when, action a) {
        _heap.push_back(event{when < _now ? _now : when, _next_seq++, std::move(a)});
        std::push_heap(_heap.begin(), _heap.end(), later{});
    }
    void after(std::uint64_t delay, action a) { at(_now + delay, std::move(a)); }
    bool empty() const { return _heap.empty(); }
    // Runs the earliest event.
    void step() {
        std::pop_heap(_heap.begin(), _heap.end(), later{});
        event e = std::move(_heap.back());
        _heap.pop_back();
        _now = e.when;
        e.what();
    }

private:
    struct event {
        std::uint64_t when;
        std::uint64_t seq;
        action what;
    };
    struct later {
        bool operator()(const event& a, const event& b) const {
            return a.when != b.when ? a.when > b.when : a.seq > b.seq;
        }
    };
    std::uint64_t _now = 0;
    std::uint64_t _next_seq = 0;
    std::vector<event> _heap;
};

}  // namespace dstream::sim
