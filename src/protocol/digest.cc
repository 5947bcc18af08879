#include "protocol/digest.h"

#include <blake3.h>

namespace dstream::protocol {

body_digest blake3_256(std::string_view bytes) {
    blake3_hasher hasher;
    blake3_hasher_init(&hasher);
    blake3_hasher_update(&hasher, bytes.data(), bytes.size());
    body_digest out{};
    blake3_hasher_finalize(&hasher, out.data(), out.size());
    return out;
}

std::string to_hex(const body_digest& digest) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out;
    out.reserve(64);
    for (auto b : digest) {
        out.push_back(hex[b >> 4]);
        out.push_back(hex[b & 15]);
    }
    return out;
}

}  // namespace dstream::protocol
