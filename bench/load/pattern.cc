#include "pattern.h"

#include <algorithm>
#include <cstring>

namespace dstream::bench {

stream_pattern::stream_pattern() : table_(kPeriod) {
    static constexpr char alphabet[] =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    // splitmix64: a fixed seed gives the same table in every run and process.
    std::uint64_t state = 0x6473747265616dULL;
    for (std::size_t i = 0; i < kPeriod; ++i) {
        state += 0x9e3779b97f4a7c15ULL;
        std::uint64_t z = state;
        z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
        z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
        z ^= z >> 31;
        table_[i] = alphabet[z % (sizeof(alphabet) - 1)];
    }
}

const stream_pattern& stream_pattern::get() {
    static const stream_pattern pattern;
    return pattern;
}

void stream_pattern::fill(std::string& out, std::uint64_t pos, std::size_t n) const {
    out.clear();
    out.reserve(n);
    while (out.size() < n) {
        const std::size_t at = static_cast<std::size_t>((pos + out.size()) % kPeriod);
        const std::size_t take = std::min(n - out.size(), kPeriod - at);
        out.append(table_.data() + at, take);
    }
}

bool stream_pattern::matches(std::string_view piece, std::uint64_t pos) const {
    std::size_t done = 0;
    while (done < piece.size()) {
        const std::size_t at = static_cast<std::size_t>((pos + done) % kPeriod);
        const std::size_t take = std::min(piece.size() - done, kPeriod - at);
        if (std::memcmp(piece.data() + done, table_.data() + at, take) != 0) return false;
        done += take;
    }
    return true;
}

void pattern_verifier::reset() {
    position_ = 0;
    got_bytes_ = false;
}

void pattern_verifier::on_body(std::string_view piece) {
    if (piece.empty()) return;
    if (!got_bytes_) {
        got_bytes_ = true;
        first_byte_ = bench_clock::now();
    }
    if (!stream_pattern::get().matches(piece, position_)) {
        if (mismatches_ == 0) first_mismatch_at_ = position_;
        ++mismatches_;
    }
    position_ += piece.size();
}

}  // namespace dstream::bench
