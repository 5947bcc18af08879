#pragma once
// Digests the checks compare: of bytes (FNV-1a) and of a log's prefix (a
// chain: each entry's digest folds in the one before it, so two logs with
// the same chain at an index are the same up to it). Only compared within
// one run, so any well-mixing function does.
#include <cstdint>
#include <string_view>

namespace dstream::sim {

inline std::uint64_t fnv1a(std::string_view bytes, std::uint64_t h = 14695981039346656037ull) {
    for (const unsigned char c : bytes) {
        h ^= c;
        h *= 1099511628211ull;
    }
    return h;
}

// splitmix64's finalizer over two words.
inline std::uint64_t mix(std::uint64_t a, std::uint64_t b) {
    std::uint64_t z = a + 0x9e3779b97f4a7c15ull + (b << 6) + (b >> 2);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return z ^ (z >> 31) ^ b;
}

}  // namespace dstream::sim
