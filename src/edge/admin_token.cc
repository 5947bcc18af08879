#include "edge/admin_token.h"

#include <cstdint>

#include "protocol/digest.h"

namespace dstream::edge {
namespace {

bool iequals_ascii(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const auto lower = [](char c) { return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c; };
        if (lower(a[i]) != lower(b[i])) return false;
    }
    return true;
}

}  // namespace

bool bearer_token_matches(std::string_view authorization, std::string_view token) {
    // RFC 9110 11.1: the scheme is case-insensitive; one or more spaces
    // separate it from the credentials.
    constexpr std::string_view scheme = "bearer";
    std::string_view sent;
    if (authorization.size() > scheme.size() &&
        iequals_ascii(authorization.substr(0, scheme.size()), scheme) &&
        authorization[scheme.size()] == ' ') {
        sent = authorization.substr(scheme.size());
        while (!sent.empty() && sent.front() == ' ') sent.remove_prefix(1);
        while (!sent.empty() && (sent.back() == ' ' || sent.back() == '\t')) sent.remove_suffix(1);
    }
    // Digests of both, compared in full: the time depends on neither the
    // token's length nor the first byte that differs.
    const protocol::body_digest a = protocol::blake3_256(sent);
    const protocol::body_digest b = protocol::blake3_256(token);
    std::uint8_t differ = 0;
    for (std::size_t i = 0; i < a.size(); ++i) differ |= static_cast<std::uint8_t>(a[i] ^ b[i]);
    return differ == 0 && !token.empty() && !sent.empty();
}

}  // namespace dstream::edge
