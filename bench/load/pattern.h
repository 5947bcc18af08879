// Deterministic stream content that a reader can check as it arrives
// (catchup, bootstrap): byte p of the stream is table[p % kPeriod], where the
// table holds printable characters from a fixed-seed generator, so the same
// content is valid for any non-JSON content type. The period is a prime near
// 1 MiB: bytes served from the wrong place in the stream match only when
// misplaced by a multiple of it. Checking is a memcmp against the table.
#pragma once

#include <chrono>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "http_client.h"

namespace dstream::bench {

class stream_pattern {
public:
    static constexpr std::size_t kPeriod = 1048573;

    // Built once, on first use.
    static const stream_pattern& get();

    // Replaces `out` with bytes [pos, pos + n) of the stream.
    void fill(std::string& out, std::uint64_t pos, std::size_t n) const;
    // True when `piece` equals bytes [pos, pos + piece.size()) of the stream.
    bool matches(std::string_view piece, std::uint64_t pos) const;

private:
    stream_pattern();
    std::vector<char> table_;
};

// A body sink that checks a stream read from its start, piece by piece.
class pattern_verifier final : public body_sink {
public:
    // A new read from the stream's first byte.
    void reset();
    void on_body(std::string_view piece) override;

    std::uint64_t position() const { return position_; }
    // Pieces that differed from the pattern, and where the first one began.
    std::uint64_t mismatches() const { return mismatches_; }
    std::uint64_t first_mismatch_at() const { return first_mismatch_at_; }
    bool got_bytes() const { return got_bytes_; }
    bench_clock::time_point first_byte() const { return first_byte_; }

private:
    std::uint64_t position_ = 0;
    std::uint64_t mismatches_ = 0;
    std::uint64_t first_mismatch_at_ = 0;
    bool got_bytes_ = false;
    bench_clock::time_point first_byte_;
};

}  // namespace dstream::bench
