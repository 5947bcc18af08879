#include "protocol/digest.h"

#include "base/binary.h"

namespace dstream::protocol {

hasher::hasher() { blake3_hasher_init(&_state); }

void hasher::update(std::string_view bytes) {
    blake3_hasher_update(&_state, bytes.data(), bytes.size());
}

body_digest hasher::finish() const {
    body_digest out{};
    blake3_hasher_finalize(&_state, out.data(), out.size());
    return out;
}

body_digest blake3_256(std::string_view bytes) {
    hasher h;
    h.update(bytes);
    return h.finish();
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

hasher snapshot_hasher(std::string_view content_type) {
    hasher h;
    binary_writer length;
    length.put_u64(content_type.size());
    h.update(std::move(length).take());
    h.update(content_type);
    return h;
}

body_digest snapshot_digest(std::string_view content_type, std::string_view body) {
    hasher h = snapshot_hasher(content_type);
    h.update(body);
    return h.finish();
}

}  // namespace dstream::protocol
