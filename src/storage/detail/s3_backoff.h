#pragma once
// The wait before attempt `retry + 2` of a call: "full jitter", uniform in
// [0, min(cap, base * 2^retry)], so that the many calls a throttled S3 fails
// at once spread out instead of coming back together.
#include <chrono>

#include "runtime/random.h"

namespace dstream::storage::detail {

std::chrono::milliseconds s3_backoff(unsigned retry, std::chrono::milliseconds base,
                                     std::chrono::milliseconds cap, runtime::random_source& random);

}  // namespace dstream::storage::detail
