#include "service/cold_tier.h"

#include <cstdio>

#include "base/stable_hash.h"
#include "protocol/offset.h"

namespace dstream::service {

namespace {

std::string stream_directory(std::string_view stream_key) {
    const std::uint64_t h = stable_hash(stream_key);
    char dir[40];
    std::snprintf(dir, sizeof dir, "%02x/%016llx", static_cast<unsigned>(h & 0xff),
                  static_cast<unsigned long long>(h));
    return dir;
}

}  // namespace

std::string snapshot_object_key(std::string_view stream_key, std::uint64_t incarnation,
                                std::uint64_t offset, std::string_view digest_hex) {
    return std::string(snapshot_key_prefix) + stream_directory(stream_key) + "/" +
           std::to_string(incarnation) + "/" + protocol::format_offset(offset) + "-" +
           std::string(digest_hex);
}

std::string chunk_object_key(std::string_view stream_key, std::uint64_t incarnation,
                             std::uint64_t start, std::uint64_t end) {
    // FNV-1a of the key spreads streams over directories; the incarnation
    // keeps a recreated stream's chunks apart.
    return std::string(chunk_key_prefix) + stream_directory(stream_key) + "/" +
           std::to_string(incarnation) + "/" + protocol::format_offset(start) + "-" +
           protocol::format_offset(end);
}

}  // namespace dstream::service
