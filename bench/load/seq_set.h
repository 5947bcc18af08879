// Sequence numbers 0 .. capacity-1 as a bitmap: the messages a reader has
// seen, the appends the server acknowledged. A bitmap rather than "the next
// expected number" because several writer connections may land appends on
// the server in another order than their numbers.
#pragma once

#include <bit>
#include <cstdint>
#include <vector>

namespace dstream::bench {

class seq_set {
public:
    explicit seq_set(std::uint64_t capacity = 0)
        : words_((capacity + 63) / 64), capacity_(capacity) {}

    std::uint64_t capacity() const { return capacity_; }
    std::uint64_t size() const { return count_; }

    // True when seq was not in the set yet. Requires seq < capacity().
    bool insert(std::uint64_t seq) {
        std::uint64_t& w = words_[seq / 64];
        const std::uint64_t bit = std::uint64_t{1} << (seq % 64);
        if (w & bit) return false;
        w |= bit;
        ++count_;
        return true;
    }

    // How many members of `wanted` this set lacks.
    std::uint64_t missing_of(const seq_set& wanted) const {
        std::uint64_t n = 0;
        for (std::size_t i = 0; i < wanted.words_.size(); ++i) {
            const std::uint64_t mine = i < words_.size() ? words_[i] : 0;
            n += static_cast<std::uint64_t>(std::popcount(wanted.words_[i] & ~mine));
        }
        return n;
    }

private:
    std::vector<std::uint64_t> words_;
    std::uint64_t capacity_ = 0;
    std::uint64_t count_ = 0;
};

}  // namespace dstream::bench
