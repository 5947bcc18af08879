#include "storage/detail/s3_encoding.h"

#include <algorithm>
#include <array>

#include <openssl/evp.h>

namespace dstream::storage::detail {
namespace {

constexpr std::string_view hex_digits = "0123456789abcdef";
constexpr std::string_view upper_hex_digits = "0123456789ABCDEF";

bool unreserved(unsigned char c) {
    return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
           c == '.' || c == '_' || c == '~';
}

}  // namespace

std::string s3_uri_encode(std::string_view text, slash slashes) {
    std::string out;
    out.reserve(text.size());
    for (const char ch : text) {
        const auto c = static_cast<unsigned char>(ch);
        if (unreserved(c) || (c == '/' && slashes == slash::keep)) {
            out.push_back(ch);
        } else {
            out.push_back('%');
            out.push_back(upper_hex_digits[c >> 4]);
            out.push_back(upper_hex_digits[c & 0xF]);
        }
    }
    return out;
}

std::string s3_canonical_query(s3_query query) {
    for (auto& [name, value] : query) {
        name = s3_uri_encode(name, slash::encode);
        value = s3_uri_encode(value, slash::encode);
    }
    // SigV4 sorts the encoded names by their bytes.
    std::sort(query.begin(), query.end());
    std::string out;
    for (const auto& [name, value] : query) {
        if (!out.empty()) out.push_back('&');
        out += name;
        out.push_back('=');
        out += value;
    }
    return out;
}

std::string s3_sha256_hex(std::string_view bytes) {
    std::array<unsigned char, EVP_MAX_MD_SIZE> digest{};
    unsigned int length = 0;
    EVP_Digest(bytes.data(), bytes.size(), digest.data(), &length, EVP_sha256(), nullptr);
    std::string out;
    out.reserve(2 * length);
    for (unsigned int i = 0; i < length; ++i) {
        out.push_back(hex_digits[digest[i] >> 4]);
        out.push_back(hex_digits[digest[i] & 0xF]);
    }
    return out;
}

}  // namespace dstream::storage::detail
