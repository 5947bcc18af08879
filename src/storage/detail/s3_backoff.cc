#include "storage/detail/s3_backoff.h"

#include <algorithm>
#include <cstdint>

namespace dstream::storage::detail {

std::chrono::milliseconds s3_backoff(unsigned retry, std::chrono::milliseconds base,
                                     std::chrono::milliseconds cap,
                                     runtime::random_source& random) {
    const auto cap_ms = static_cast<std::uint64_t>(std::max<std::int64_t>(cap.count(), 0));
    std::uint64_t ceiling = static_cast<std::uint64_t>(std::max<std::int64_t>(base.count(), 0));
    for (unsigned i = 0; i < retry && ceiling < cap_ms; ++i) ceiling *= 2;
    ceiling = std::min(ceiling, cap_ms);
    return std::chrono::milliseconds(static_cast<std::int64_t>(random.next() % (ceiling + 1)));
}

}  // namespace dstream::storage::detail
