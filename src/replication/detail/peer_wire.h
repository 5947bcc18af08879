#pragma once
// The bytes of the peer transport (peer_network): a hello each way, then
// frames. Integers are little-endian.
//
//   hello:  magic u32 | version u32 | body length u16 | body
//           body (version 1) = node id u64 | cluster id (the rest)
//   frame:  group u32 | length u32 | length bytes
//
// The magic, the version and the body length never change place, so a node
// can name another node's version before it reads a body whose layout that
// version decides. Two group ids are reserved for the keep-alive: a ping
// carries the sender's clock, its pong the same bytes back.
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dstream::replication::detail {

inline constexpr std::uint32_t peer_magic = 0x4e505344;  // "DSPN"
// Raise it with any change to the hello body, the frames or what a message
// carries (2: an InstallSnapshot carries a reference to its image, snapshot_courier.h).
inline constexpr std::uint32_t peer_protocol_version = 2;

inline constexpr std::size_t hello_prefix_bytes = 10;
inline constexpr std::size_t max_cluster_id_bytes = 64;  // the cluster file's bound
inline constexpr std::size_t frame_header_bytes = 8;
// A frame longer than this is no message of ours: the connection closes.
inline constexpr std::uint32_t max_frame_bytes = 64u << 20;

inline constexpr std::uint32_t ping_group = 0xffffffff;
inline constexpr std::uint32_t pong_group = 0xfffffffe;
// A node's own messages, beside its groups' (peer_network::node_transport).
inline constexpr std::uint32_t node_group = 0xfffffffd;
inline constexpr bool is_reserved_group(std::uint32_t group) { return group >= pong_group; }

struct hello_prefix {
    std::uint32_t magic = 0;
    std::uint32_t version = 0;
    std::uint16_t body_bytes = 0;
};

struct hello {
    std::uint64_t node = 0;
    std::string cluster_id;
};

std::string encode_hello(const hello& h);
// `bytes` holds hello_prefix_bytes.
hello_prefix decode_hello_prefix(std::string_view bytes);
// A version 1 body; nothing when it is too short or its cluster id too long.
std::optional<hello> decode_hello_body(std::string_view bytes);

struct frame_header {
    std::uint32_t group = 0;
    std::uint32_t length = 0;
};

void append_frame(std::string& out, std::uint32_t group, std::string_view payload);
// A frame's header alone, its `length` bytes sent after it from elsewhere.
void append_frame_header(std::string& out, std::uint32_t group, std::uint32_t length);
// `bytes` holds frame_header_bytes.
frame_header decode_frame_header(std::string_view bytes);

}  // namespace dstream::replication::detail
