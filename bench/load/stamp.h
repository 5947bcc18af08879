// Messages that carry their own send time, for the delivery-latency
// scenarios (fanout, longpoll): the body starts with "#SEQ:NS:" (sequence
// number, steady-clock nanoseconds at the write) and is padded to the asked
// size with filler that holds no '#'. A JSON stream gets it as one JSON
// string.
//
// Readers see messages glued together, split across network reads, inside
// JSON arrays or SSE data lines; the scanner finds every stamp in such a byte
// stream whatever the framing around it, since nothing but a stamp holds '#'.
// Writer and readers are one process, so the clocks agree.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace dstream::bench {

// The longest stamp: '#', 20 digits, ':', 20 digits, ':'.
inline constexpr std::size_t kMaxStampBytes = 43;

// Replaces `out` with a stamped body of max(body_bytes, stamp length) bytes
// (two more than the stamp at least for JSON). No allocation once `out` has
// the capacity.
void write_stamped_body(std::string& out, std::uint64_t seq, std::uint64_t sent_ns,
                        std::size_t body_bytes, bool json);

class stamp_scanner {
public:
    // Calls on_stamp(seq, sent_ns) for every complete stamp in `bytes`; a
    // stamp split between calls is completed by the next one.
    template <class F>
    void feed(std::string_view bytes, F&& on_stamp) {
        for (const char c : bytes) {
            if (c == '#') {
                state_ = state::seq;
                seq_ = 0;
                digits_ = 0;
                continue;
            }
            if (state_ == state::seek) continue;
            std::uint64_t& value = state_ == state::seq ? seq_ : ns_;
            if (c >= '0' && c <= '9' && digits_ < 20) {
                value = value * 10 + static_cast<std::uint64_t>(c - '0');
                ++digits_;
            } else if (c == ':' && digits_ > 0 && state_ == state::seq) {
                state_ = state::ns;
                ns_ = 0;
                digits_ = 0;
            } else if (c == ':' && digits_ > 0) {
                on_stamp(seq_, ns_);
                state_ = state::seek;
            } else {
                ++malformed_;
                state_ = state::seek;
            }
        }
    }

    void reset() { state_ = state::seek; }
    // '#' sequences that were not stamps (a reader's framing bug, or corruption).
    std::uint64_t malformed() const { return malformed_; }

private:
    enum class state { seek, seq, ns };
    state state_ = state::seek;
    std::uint64_t seq_ = 0;
    std::uint64_t ns_ = 0;
    unsigned digits_ = 0;
    std::uint64_t malformed_ = 0;
};

// Steady-clock nanoseconds, as stamped.
std::uint64_t stamp_now_ns();

}  // namespace dstream::bench
