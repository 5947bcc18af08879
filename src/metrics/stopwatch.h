#pragma once
// Elapsed time for a latency histogram, in its unit (microseconds).
#include <chrono>
#include <cstdint>

namespace dstream::metrics {

class stopwatch {
public:
    std::uint64_t elapsed_us() const {
        return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::microseconds>(
                                              std::chrono::steady_clock::now() - _start)
                                              .count());
    }

private:
    std::chrono::steady_clock::time_point _start = std::chrono::steady_clock::now();
};

}  // namespace dstream::metrics
