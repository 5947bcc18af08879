#pragma once
// The admin listener's bearer token (`--admin-token-file`): a request must
// carry `Authorization: Bearer <token>` (RFC 6750 2.1). The comparison takes
// the same time whatever the token sent, so that timing tells a client
// nothing of the token: both sides are hashed (BLAKE3) and the digests
// compared in full.
#include <string_view>

namespace dstream::edge {

// Whether `authorization` (the header's value) is the bearer scheme with
// exactly `token`. An empty `token` matches nothing.
bool bearer_token_matches(std::string_view authorization, std::string_view token);

}  // namespace dstream::edge
