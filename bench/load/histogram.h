// A small HDR-style log-linear histogram of non-negative integer values
// (the load generator records nanoseconds).
//
// Values below 2^kSubBits are counted exactly. Above that, every power of two
// [2^m, 2^(m+1)) is split into 2^(kSubBits-1) equal sub-buckets, so a bucket's
// width is at most 1/2^(kSubBits-1) of its lower bound: with kSubBits = 8 the
// relative error of a reported value is below 0.8% (about 1%, like an
// HdrHistogram with 2 significant digits). Values above kMaxValue are clamped
// into the last bucket (max() still reports the exact largest value).
//
// Recording is one count-leading-zeros, a shift and an increment: no
// allocation after construction. Not thread-safe: keep one per thread and
// merge() them at the end.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>

namespace dstream::bench {

namespace histogram_detail {

inline constexpr int kSubBits = 8;

// v < 2^kSubBits: index v. Otherwise with msb = floor(log2 v) and
// shift = msb - (kSubBits - 1), v >> shift lies in [2^(kSubBits-1), 2^kSubBits)
// and the index is (shift << (kSubBits - 1)) + (v >> shift): contiguous
// from one power of two to the next.
constexpr std::size_t index_of(std::uint64_t v) noexcept {
    if (v < (std::uint64_t{1} << kSubBits)) return static_cast<std::size_t>(v);
    const int msb = 63 - std::countl_zero(v);
    const int shift = msb - (kSubBits - 1);
    return (static_cast<std::size_t>(shift) << (kSubBits - 1)) +
           static_cast<std::size_t>(v >> shift);
}

}  // namespace histogram_detail

class histogram {
public:
    static constexpr int kSubBits = histogram_detail::kSubBits;
    static constexpr std::uint64_t kLinearLimit = std::uint64_t{1} << kSubBits;  // exact below this
    static constexpr int kMaxBits = 42;  // ~4.4e12: 73 minutes in nanoseconds
    static constexpr std::uint64_t kMaxValue = (std::uint64_t{1} << kMaxBits) - 1;
    static constexpr std::size_t kBuckets = histogram_detail::index_of(kMaxValue) + 1;

    void record(std::uint64_t v) noexcept {
        ++counts_[index_of(v)];
        ++total_;
        sum_ += static_cast<double>(v);
        if (v > max_) max_ = v;
        if (v < min_) min_ = v;
    }

    void merge(const histogram& o) noexcept {
        for (std::size_t i = 0; i < kBuckets; ++i) counts_[i] += o.counts_[i];
        total_ += o.total_;
        sum_ += o.sum_;
        max_ = std::max(max_, o.max_);
        min_ = std::min(min_, o.min_);
    }

    void reset() noexcept { *this = histogram{}; }

    std::uint64_t count() const noexcept { return total_; }
    std::uint64_t max() const noexcept { return total_ ? max_ : 0; }
    std::uint64_t min() const noexcept { return total_ ? min_ : 0; }
    double mean() const noexcept { return total_ ? sum_ / static_cast<double>(total_) : 0.0; }

    // The value at percentile p (0..100], as HdrHistogram reports it: the
    // highest value equivalent to the bucket holding the ceil(p% * count)-th
    // smallest sample, clamped to [min, max].
    std::uint64_t percentile(double p) const noexcept {
        if (total_ == 0) return 0;
        p = std::clamp(p, 0.0, 100.0);
        auto rank = static_cast<std::uint64_t>(std::ceil(p / 100.0 * static_cast<double>(total_)));
        rank = std::clamp<std::uint64_t>(rank, 1, total_);
        std::uint64_t seen = 0;
        for (std::size_t i = 0; i < kBuckets; ++i) {
            seen += counts_[i];
            if (seen >= rank) return std::clamp(highest_equivalent(i), min_, max_);
        }
        return max_;
    }

    // Exposed for the self-test in the bench (and anyone curious).
    static constexpr std::size_t index_of(std::uint64_t v) noexcept {
        return histogram_detail::index_of(std::min(v, kMaxValue));
    }
    static constexpr std::uint64_t lowest_equivalent(std::size_t i) noexcept {
        if (i < kLinearLimit) return i;
        const int shift = static_cast<int>(i >> (kSubBits - 1)) - 1;
        const std::uint64_t m = i - (static_cast<std::uint64_t>(shift) << (kSubBits - 1));
        return m << shift;
    }
    static constexpr std::uint64_t highest_equivalent(std::size_t i) noexcept {
        if (i < kLinearLimit) return i;
        const int shift = static_cast<int>(i >> (kSubBits - 1)) - 1;
        const std::uint64_t m = i - (static_cast<std::uint64_t>(shift) << (kSubBits - 1));
        return ((m + 1) << shift) - 1;
    }

private:
    std::array<std::uint64_t, kBuckets> counts_{};
    std::uint64_t total_ = 0;
    double sum_ = 0;
    std::uint64_t max_ = 0;
    std::uint64_t min_ = std::numeric_limits<std::uint64_t>::max();
};

}  // namespace dstream::bench
