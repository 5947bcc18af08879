#pragma once
// BLAKE3-256: Producer-Digest (extensions 5.2) and snapshot digests (2.2).
#include <blake3.h>
#include <string>
#include <string_view>

#include "protocol/producer.h"

namespace dstream::protocol {

// BLAKE3-256 of bytes fed in pieces, so a body that never sits whole in
// memory (a snapshot assembled from parts) is digested as it streams by.
class hasher {
public:
    hasher();
    void update(std::string_view bytes);
    body_digest finish() const;

private:
    blake3_hasher _state;
};

body_digest blake3_256(std::string_view bytes);
std::string to_hex(const body_digest& digest);

// A snapshot's digest covers the content type's length (u64 LE), the content
// type and the body (extensions 4.4 note); this hasher has taken the first
// two, the caller feeds the body.
hasher snapshot_hasher(std::string_view content_type);
body_digest snapshot_digest(std::string_view content_type, std::string_view body);

}  // namespace dstream::protocol
