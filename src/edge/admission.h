#pragma once
// Admission control of one node: request bodies in memory and live readers
// are bounded, and a request past a bound is refused early with 503 and
// Retry-After (INGRESS_BODY_BYTES_LIMIT_REACHED, LIVE_READ_BACKPRESSURE)
// instead of queueing without end.
#include <atomic>
#include <cstdint>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>

namespace dstream::edge {

struct admission_limits {
    std::uint64_t body_bytes = 256u << 20;  // bodies being read or handled, all connections
    std::uint64_t live_reads = 20000;       // waiting long-polls and SSE streams, the node
    std::uint64_t live_reads_per_stream = 10000;
};

class admission {
public:
    explicit admission(admission_limits limits) : _limits(limits) {}

    // A share of a budget, given back when the ticket is destroyed.
    class ticket {
    public:
        ticket(ticket&& o) noexcept
            : _owner(std::exchange(o._owner, nullptr)),
              _stream(std::move(o._stream)),
              _bytes(o._bytes) {}
        ticket& operator=(ticket&&) = delete;
        ~ticket();

    private:
        friend class admission;
        ticket(admission* owner, std::string stream, std::uint64_t bytes)
            : _owner(owner), _stream(std::move(stream)), _bytes(bytes) {}
        admission* _owner;
        std::string _stream;  // a live read's stream; empty for a body
        std::uint64_t _bytes;
    };

    // `bytes` of request body (0: no body, always admitted); nothing when the
    // node holds too much already.
    std::optional<ticket> admit_body(std::uint64_t bytes);
    // One live reader of `stream_key`; nothing past either bound.
    std::optional<ticket> admit_live_read(const std::string& stream_key);

private:
    void release(const ticket& t);

    admission_limits _limits;
    std::mutex _mutex;
    std::atomic<std::uint64_t> _body_bytes{0};
    std::uint64_t _live_reads = 0;
    std::unordered_map<std::string, std::uint64_t> _live_by_stream;
};

}  // namespace dstream::edge
