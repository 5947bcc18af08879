#include "protocol/snapshot_digest.h"

#include <array>
#include <blake3.h>
#include <cstdint>

namespace dstream::protocol {

body_digest snapshot_digest(std::string_view content_type, std::string_view body) {
    std::array<std::uint8_t, 8> length{};
    for (std::size_t i = 0; i < length.size(); ++i) {
        length[i] =
            static_cast<std::uint8_t>(static_cast<std::uint64_t>(content_type.size()) >> (8 * i));
    }
    blake3_hasher hasher;
    blake3_hasher_init(&hasher);
    blake3_hasher_update(&hasher, length.data(), length.size());
    blake3_hasher_update(&hasher, content_type.data(), content_type.size());
    blake3_hasher_update(&hasher, body.data(), body.size());
    body_digest out{};
    blake3_hasher_finalize(&hasher, out.data(), out.size());
    return out;
}

}  // namespace dstream::protocol
