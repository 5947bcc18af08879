#include "stamp.h"

#include <chrono>

#include "http_client.h"

namespace dstream::bench {

void write_stamped_body(std::string& out, std::uint64_t seq, std::uint64_t sent_ns,
                        std::size_t body_bytes, bool json) {
    static constexpr char filler[] = "abcdefghijklmnopqrstuvwxyz";
    out.clear();
    if (json) out.push_back('"');
    out.push_back('#');
    append_number(out, seq);
    out.push_back(':');
    append_number(out, sent_ns);
    out.push_back(':');
    const std::size_t closing = json ? 1 : 0;
    for (std::size_t i = 0; out.size() + closing < body_bytes; ++i) {
        out.push_back(filler[i % (sizeof(filler) - 1)]);
    }
    if (json) out.push_back('"');
}

std::uint64_t stamp_now_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(bench_clock::now().time_since_epoch())
            .count());
}

}  // namespace dstream::bench
