#pragma once
// Memory for the header fields of one connection's messages. Beast gives
// each field of a request or an answer an allocation of its own, about six
// per append; a connection takes them from one block instead.
//
// Allocation bumps a cursor in the block, which is taken from the heap at
// the first allocation and given back with the last, when the request and
// its answer are gone: one allocation per request instead of one per field,
// and an idle connection holds no block. A field still held (or one larger
// than the block's room) just makes the next allocations come from the
// heap, so nothing is handed out twice. One connection's messages are
// touched by one thread at a time (its strand), so the arena needs no lock.
#include <cstddef>
#include <new>
#include <type_traits>

namespace dstream::edge {

class field_arena {
public:
    static constexpr std::size_t block_bytes = 4096;

    field_arena() = default;
    field_arena(const field_arena&) = delete;
    field_arena& operator=(const field_arena&) = delete;
    ~field_arena() { ::operator delete(_block); }

    void* allocate(std::size_t bytes) {
        const std::size_t rounded = (bytes + alignment - 1) / alignment * alignment;
        if (rounded > block_bytes - _used) return ::operator new(bytes);
        if (_block == nullptr) _block = static_cast<std::byte*>(::operator new(block_bytes));
        void* p = _block + _used;
        _used += rounded;
        ++_live;
        return p;
    }

    void deallocate(void* p) noexcept {
        if (!holds(p)) {
            ::operator delete(p);
            return;
        }
        if (--_live > 0) return;
        _used = 0;
        ::operator delete(_block);
        _block = nullptr;
    }

    // Bytes of the block in use: 0 when it holds nothing.
    std::size_t used() const { return _used; }
    // Whether the arena holds a block now.
    bool holds_block() const { return _block != nullptr; }

    // Whether `p` points into the block (not into a heap allocation).
    bool holds(const void* p) const {
        const auto* byte = static_cast<const std::byte*>(p);
        return _block != nullptr && byte >= _block && byte < _block + block_bytes;
    }

private:
    // What ::operator new gives, and what every field type needs.
    static constexpr std::size_t alignment = __STDCPP_DEFAULT_NEW_ALIGNMENT__;

    std::byte* _block = nullptr;
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
