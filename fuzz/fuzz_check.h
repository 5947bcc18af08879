#pragma once
// Invariants of the fuzz targets. A broken one prints what broke and aborts;
// libFuzzer reports the abort as a crash and saves the input.
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string_view>

namespace dstream::fuzz {

inline void check(bool holds, const char* invariant) {
    if (holds) return;
    std::fprintf(stderr, "fuzz invariant broken: %s\n", invariant);
    std::abort();
}

inline std::string_view as_text(const std::uint8_t* data, std::size_t size) {
    return {reinterpret_cast<const char*>(data), size};
}

}  // namespace dstream::fuzz
