#include "storage/hot_bytes.h"

#include <algorithm>
#include <cassert>
#include <cstring>

#include "base/huge_pages.h"

namespace dstream::storage {
namespace {

// Small first blocks keep many small streams cheap; blocks double up to 1 MiB
// so long streams have few blocks.
constexpr std::size_t min_block = 1024;
constexpr std::size_t max_block = 1 << 20;
// The pages of a block are faulted in this many bytes ahead of its appends,
// in one call: a fault taken by the copy costs about 15 µs on a VM whose
// hypervisor traps it (base/huge_pages.h), one per 4 KiB, which was 6% of
// a `--memory` server's CPU under 1 KiB appends. Blocks this small or
// smaller are left to fault as written: they are the idle streams' memory.
constexpr std::size_t populate_step = 64 << 10;

}  // namespace

void hot_bytes::append(std::string_view bytes) {
    while (!bytes.empty()) {
        if (_blocks.empty() || _blocks.back().used == _blocks.back().capacity) {
            const std::size_t previous = _blocks.empty() ? 0 : _blocks.back().capacity;
            const std::size_t grown = std::clamp(previous * 2, min_block, max_block);
            // A large append gets one block of its own, on huge pages.
            const std::size_t capacity = bytes.size() >= huge_page_buffer_bytes
                                             ? bytes.size()
                                             : std::max(grown, std::min(bytes.size(), max_block));
            block b;
            const std::shared_ptr<char[]> memory(new char[capacity]);
            b.owner = memory;
            b.data = memory.get();
            advise_huge_pages(b.data, capacity);
            b.capacity = capacity;
            b.first_offset = _end;
            _blocks.push_back(std::move(b));
            _capacity += capacity;
        }
        block& last = _blocks.back();
        const std::size_t n = std::min(bytes.size(), last.capacity - last.used);
        populate_ahead(last, last.used + n);
        std::memcpy(last.data + last.used, bytes.data(), n);
        last.used += n;
        _end += n;
        bytes.remove_prefix(n);
    }
}

void hot_bytes::populate_ahead(block& b, std::size_t until) {
    if (b.capacity <= populate_step || until <= b.populated || b.capacity >= huge_page_buffer_bytes) return;
    const std::size_t to = std::min(b.capacity, until + populate_step);
    populate_for_writing(b.data + b.populated, to - b.populated);
    b.populated = to;
}

void hot_bytes::append_owned(std::string&& bytes) {
    if (bytes.size() < huge_page_buffer_bytes) {
        append(std::string_view(bytes));
        return;
    }
    auto held = std::make_shared<std::string>(std::move(bytes));
    block b;
    b.data = held->data();
    b.capacity = b.used = held->size();
    b.first_offset = _end;
    b.owner = std::move(held);
    _end += b.used;
    _capacity += b.capacity;
    _blocks.push_back(std::move(b));
}

std::size_t hot_bytes::find_block(std::uint64_t offset) const {
    auto it = std::upper_bound(_blocks.begin(), _blocks.end(), offset,
                               [](std::uint64_t o, const block& b) { return o < b.first_offset; });
    assert(it != _blocks.begin());
    return static_cast<std::size_t>(it - _blocks.begin()) - 1;
}

std::uint64_t hot_bytes::read(std::uint64_t from, std::uint64_t max,
                              std::vector<byte_slice>& out) const {
    assert(from >= _base && from <= _end);
    const std::uint64_t stop = std::min(_end, from + std::min(max, _end - from));
    if (from == stop) return from;
    for (std::size_t i = find_block(from); i < _blocks.size() && from < stop; ++i) {
        const block& b = _blocks[i];
        const std::size_t start = from - b.first_offset;
        const std::size_t n = std::min<std::uint64_t>(b.used - start, stop - from);
        out.push_back(byte_slice{b.owner, b.data + start, n});
        from += n;
    }
    return from;
}

void hot_bytes::trim_before(std::uint64_t offset) {
    std::size_t drop = 0;
    while (drop < _blocks.size() && _blocks[drop].first_offset + _blocks[drop].used <= offset &&
           _blocks[drop].used == _blocks[drop].capacity) {
        _capacity -= _blocks[drop].capacity;
        ++drop;
    }
    _blocks.erase(_blocks.begin(), _blocks.begin() + static_cast<std::ptrdiff_t>(drop));
    _base = _blocks.empty() ? _end : _blocks.front().first_offset;
}

char hot_bytes::byte_at(std::uint64_t offset) const {
    const block& b = _blocks[find_block(offset)];
    return b.data[offset - b.first_offset];
}

}  // namespace dstream::storage
