#include "service/cold_tier.h"

#include <charconv>
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

error cold_read_refusal() {
    return make_error(protocol::error_code::cold_backpressure,
                      "the cold store is unavailable; retry later");
}

std::string snapshot_object_key(std::string_view stream_key, std::uint64_t incarnation,
                                std::uint64_t offset, std::string_view digest_hex) {
    return std::string(snapshot_key_prefix) + stream_directory(stream_key) + "/" +
           std::to_string(incarnation) + "/" + protocol::format_offset(offset) + "-" +
           std::string(digest_hex);
}

std::string stream_parts_prefix(std::string_view stream_key) {
    return std::string(part_key_prefix) + stream_directory(stream_key) + "/";
}

std::string part_object_key(std::string_view stream_key, std::uint64_t incarnation,
                            std::string_view part_id) {
    return stream_parts_prefix(stream_key) + std::to_string(incarnation) + "/" +
           std::string(part_id);
}

std::optional<part_object_name> parse_part_object_key(std::string_view key) {
    // parts/<2 hex>/<16 hex>/<incarnation>/<id>
    const std::size_t directory_end = part_key_prefix.size() + 2 + 1 + 16 + 1;
    if (!key.starts_with(part_key_prefix) || key.size() <= directory_end) return std::nullopt;
    const std::string_view rest = key.substr(directory_end);
    const auto slash = rest.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == rest.size())
        return std::nullopt;
    part_object_name name;
    name.stream_prefix = key.substr(0, directory_end);
    auto [end, ec] = std::from_chars(rest.data(), rest.data() + slash, name.incarnation);
    if (ec != std::errc() || end != rest.data() + slash) return std::nullopt;
    name.part_id = rest.substr(slash + 1);
    if (name.part_id.find('/') != std::string_view::npos) return std::nullopt;
    return name;
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
