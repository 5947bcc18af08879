#pragma once
// Memory for the header fields of one connection's messages. Beast gives
// each field of a request or an answer an allocation of its own, about six
// per append; a connection takes them from a block it owns and reuses.
//
// Allocation bumps a cursor; the block starts over once every allocation in
// it was given back, which happens between requests, when the request and
// its answer are gone. A field still held (or a head larger than the block)
// just makes the next allocations come from the heap, so nothing is handed
// out twice. One connection's messages are touched by one thread at a time
// (its strand), so the arena needs no lock.
#include <array>
#include <cstddef>
#include <new>
#include <type_traits>

namespace dstream::edge {

class field_arena {
public:
    field_arena() = default;
    field_arena(const field_arena&) = delete;
    field_arena& operator=(const field_arena&) = delete;

    void* allocate(std::size_t bytes) {
        const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
        if (rounded <= _block.size() - _used) {
            void* p = _block.data() + _used;
            _used += rounded;
            ++_live;
            return p;
        }
        return ::operator new(bytes);
    }

    void deallocate(void* p) noexcept {
        if (!holds(p)) {
            ::operator delete(p);
            return;
        }
        if (--_live == 0) _used = 0;
    }

    // Bytes of the block in use: 0 when it holds nothing.
    std::size_t used() const { return _used; }

    // Whether `p` points into the block (not into a heap allocation).
    bool holds(const void* p) const {
        const auto* byte = static_cast<const std::byte*>(p);
        return byte >= _block.data() && byte < _block.data() + _block.size();
    }

private:
    static constexpr std::size_t alignment = alignof(std::max_align_t);

    // Not zeroed: pages an idle connection never reaches stay untouched.
    alignas(alignment) std::array<std::byte, 4096> _block;
    std::size_t _used = 0;
    std::size_t _live = 0;
};

// A standard allocator over a field_arena; a default one (no arena) takes
// from the heap, for messages that belong to no connection. It travels with
// the fields it allocated when they are moved or copied, so each allocation
// goes back where it came from.
template <typename T>
class field_allocator {
public:
    using value_type = T;
    using propagate_on_container_copy_assignment = std::true_type;
    using propagate_on_container_move_assignment = std::true_type;
    using propagate_on_container_swap = std::true_type;
    using is_always_equal = std::false_type;

    field_allocator() noexcept = default;
    explicit field_allocator(field_arena* arena) noexcept : _arena(arena) {}
    template <typename U>
    field_allocator(const field_allocator<U>& other) noexcept : _arena(other.arena()) {}

    T* allocate(std::size_t n) {
        const std::size_t bytes = n * sizeof(T);
        return static_cast<T*>(_arena ? _arena->allocate(bytes) : ::operator new(bytes));
    }
    void deallocate(T* p, std::size_t) noexcept {
        if (_arena) {
            _arena->deallocate(p);
        } else {
            ::operator delete(p);
        }
    }

    field_arena* arena() const noexcept { return _arena; }

    template <typename U>
    bool operator==(const field_allocator<U>& other) const noexcept {
        return _arena == other.arena();
    }

private:
    field_arena* _arena = nullptr;
};

}  // namespace dstream::edge
