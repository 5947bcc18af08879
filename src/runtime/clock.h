#pragma once
// The node's clock. Only proposers read it: the time travels in commands.
#include <chrono>

#include "protocol/expiry.h"

namespace dstream::runtime {

inline protocol::unix_ms now_unix_ms() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
        .count();
}

}  // namespace dstream::runtime
