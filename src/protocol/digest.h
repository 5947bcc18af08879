#pragma once
// BLAKE3-256: Producer-Digest (extensions 5.2) and snapshot digests (2.2).
#include <string>
#include <string_view>

#include "protocol/producer.h"

namespace dstream::protocol {

body_digest blake3_256(std::string_view bytes);
std::string to_hex(const body_digest& digest);

}  // namespace dstream::protocol
