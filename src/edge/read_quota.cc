#include "edge/read_quota.h"

#include <algorithm>
#include <iterator>

namespace dstream::edge {

double read_quota::refill(bucket& b, clock::time_point now) const {
    const double elapsed = std::chrono::duration<double>(now - b.at).count();
    b.at = now;
    b.tokens =
        std::min(static_cast<double>(_rate), b.tokens + elapsed * static_cast<double>(_rate));
    return b.tokens;
}

read_quota::clock::duration read_quota::charge(const std::string& client, std::uint64_t bytes,
                                               clock::time_point now) {
    if (_rate == 0) return clock::duration::zero();
    const std::lock_guard lock(_mutex);
    if (_clients.size() >= max_clients) {
        for (auto it = _clients.begin(); it != _clients.end();) {
            it = refill(it->second, now) >= static_cast<double>(_rate) ? _clients.erase(it)
                                                                       : std::next(it);
        }
    }
    auto [it, fresh] = _clients.try_emplace(client, bucket{static_cast<double>(_rate), now});
    bucket& b = it->second;
    if (!fresh) refill(b, now);
    b.tokens -= static_cast<double>(bytes);
    if (b.tokens >= 0) return clock::duration::zero();
    return std::chrono::duration_cast<clock::duration>(
        std::chrono::duration<double>(-b.tokens / static_cast<double>(_rate)));
}

}  // namespace dstream::edge
