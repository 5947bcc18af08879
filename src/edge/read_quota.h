#pragma once
// A read quota per client address: the bytes of read bodies one address
// may be sent per second, as a token bucket holding at most one second's
// worth. A read past it is delayed, not refused, until the bucket has paid
// for it: a client that reads without pause (hundreds of catch-up readers
// on one host) gets its quota and leaves the rest of the node's CPU and
// network to writers and other clients. Off (0) by default.
#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <unordered_map>

namespace dstream::edge {

class read_quota {
public:
    using clock = std::chrono::steady_clock;

    // `bytes_per_second` 0: no quota.
    explicit read_quota(std::uint64_t bytes_per_second) : _rate(bytes_per_second) {}

    bool enabled() const { return _rate > 0; }

    // Charges `bytes` to `client` at `now`; returns how long the read must
    // wait before it is sent (zero within the quota).
    clock::duration charge(const std::string& client, std::uint64_t bytes, clock::time_point now);

private:
    struct bucket {
        double tokens = 0;  // bytes; negative: owed
        clock::time_point at;
    };
    // Buckets that have refilled say nothing a new one would not: they are
    // dropped when the table grows past this many.
    static constexpr std::size_t max_clients = 65536;

    double refill(bucket& b, clock::time_point now) const;

    const std::uint64_t _rate;
    std::mutex _mutex;
    std::unordered_map<std::string, bucket> _clients;
};

}  // namespace dstream::edge
