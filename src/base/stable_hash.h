#pragma once
// FNV-1a 64: stable across builds and platforms, so a stream keeps its group
// and its chunk directory across restarts and versions.
#include <cstdint>
#include <string_view>

namespace dstream {

inline std::uint64_t stable_hash(std::string_view bytes) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : bytes) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

}  // namespace dstream
