#pragma once
// A first-in first-out queue that keeps its storage: pushes past the
// highest length reached so far allocate, later ones reuse it. For queues
// that fill and drain all the time with large elements (a group's commands
// awaiting their flush), where std::deque allocates a block per element.
#include <cstddef>
#include <utility>
#include <vector>

namespace dstream {

template <typename T>
class reusable_queue {
public:
    bool empty() const { return _head == _items.size(); }
    std::size_t size() const { return _items.size() - _head; }
    T& front() { return _items[_head]; }
    T& back() { return _items.back(); }
    // Elements the storage holds without allocating.
    std::size_t capacity() const { return _items.capacity(); }

    void push_back(T item) {
        // The consumed front is reclaimed when it is at least half the
        // storage, so the storage stays within twice the longest queue.
        if (_head > 0 && _head * 2 >= _items.size()) {
            _items.erase(_items.begin(), _items.begin() + static_cast<std::ptrdiff_t>(_head));
            _head = 0;
        }
        _items.push_back(std::move(item));
    }

    // Destroys the front element's contents now (a moved-from element may
    // still hold some) and makes the next one the front.
    void pop_front() {
        _items[_head] = T();
        if (++_head == _items.size()) {
            _items.clear();  // keeps the capacity
            _head = 0;
        }
    }

private:
    std::vector<T> _items;
    std::size_t _head = 0;
};

}  // namespace dstream
