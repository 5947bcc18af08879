#pragma once
// The bytes of one stream held in memory, append-only. Bytes live in blocks
// that are never reallocated, so a reader can keep a block alive (shared_ptr)
// and send a slice of it from another thread while the owner appends past the
// slice: written bytes never move or change.
#include <cstdint>
#include <memory>
#include <string_view>
#include <vector>

#include "base/byte_slice.h"

namespace dstream::storage {

class hot_bytes {
public:
    // `base` is the offset of the first byte held (the stream's first offset).
    explicit hot_bytes(std::uint64_t base = 0) : _base(base), _end(base) {}

    std::uint64_t begin_offset() const { return _base; }
    std::uint64_t end_offset() const { return _end; }

    void append(std::string_view bytes);
    // A large string becomes a block as it is, without a copy (its memory
    // is already on huge pages when a decode made it, base/huge_pages.h).
    void append_owned(std::string&& bytes);

    // Appends to `out` slices covering [from, min(from + max, end)); returns the
    // offset after the last byte covered. `from` must lie in [begin, end].
    std::uint64_t read(std::uint64_t from, std::uint64_t max, std::vector<byte_slice>& out) const;

    // The byte at `offset` (begin <= offset < end).
    char byte_at(std::uint64_t offset) const;

    // Releases the blocks that hold only bytes below `offset` (they moved to
    // the cold tier); begin_offset() becomes the first byte still held.
    void trim_before(std::uint64_t offset);

    // Bytes of memory held, for accounting.
    std::size_t capacity_bytes() const { return _capacity; }

private:
    struct block {
        std::shared_ptr<const void> owner;
        char* data = nullptr;
        std::size_t capacity = 0;
        std::size_t used = 0;
        // Bytes from data on whose pages are faulted in (populate_ahead).
        std::size_t populated = 0;
        std::uint64_t first_offset = 0;
    };
    static void populate_ahead(block& b, std::size_t until);
    std::size_t find_block(std::uint64_t offset) const;

    std::uint64_t _base;
    std::uint64_t _end;
    std::size_t _capacity = 0;
    std::vector<block> _blocks;
};

}  // namespace dstream::storage
