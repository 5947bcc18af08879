#include "replication/detail/peer_wire.h"

#include "base/binary.h"

namespace dstream::replication::detail {

std::string encode_hello(const hello& h) {
    const auto body_bytes = static_cast<std::uint16_t>(8 + h.cluster_id.size());
    binary_writer out;
    out.reserve(hello_prefix_bytes + body_bytes);
    out.put_u32(peer_magic);
    out.put_u32(peer_protocol_version);
    out.put_u8(static_cast<std::uint8_t>(body_bytes & 0xff));
    out.put_u8(static_cast<std::uint8_t>(body_bytes >> 8));
    out.put_u64(h.node);
    std::string bytes = std::move(out).take();
    bytes += h.cluster_id;
    return bytes;
}

hello_prefix decode_hello_prefix(std::string_view bytes) {
    binary_reader in(bytes);
    hello_prefix p;
    std::uint8_t low = 0, high = 0;
    in.get_u32(p.magic);
    in.get_u32(p.version);
    in.get_u8(low);
    in.get_u8(high);
    p.body_bytes = static_cast<std::uint16_t>(low | (high << 8));
    return p;
}

std::optional<hello> decode_hello_body(std::string_view bytes) {
    binary_reader in(bytes);
    hello h;
    if (!in.get_u64(h.node)) return std::nullopt;
    const std::string_view id = bytes.substr(8);
    if (id.size() > max_cluster_id_bytes) return std::nullopt;
    h.cluster_id.assign(id);
    return h;
}

void append_frame_header(std::string& out, std::uint32_t group, std::uint32_t length) {
    const auto put_u32 = [&out](std::uint32_t v) {
        for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>(v >> (8 * i)));
    };
    put_u32(group);
    put_u32(length);
}

void append_frame(std::string& out, std::uint32_t group, std::string_view payload) {
    append_frame_header(out, group, static_cast<std::uint32_t>(payload.size()));
    out += payload;
}

frame_header decode_frame_header(std::string_view bytes) {
    binary_reader in(bytes);
    frame_header h;
    in.get_u32(h.group);
    in.get_u32(h.length);
    return h;
}

}  // namespace dstream::replication::detail
