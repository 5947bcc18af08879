#include "protocol/snapshot_parts.h"

#include <unordered_set>

#include "protocol/decimal.h"

namespace dstream::protocol {
namespace {

constexpr std::size_t part_id_digits = 32;
constexpr std::size_t time_digits = 12;

error invalid_commit(std::string message) {
    return make_error(error_code::invalid_parts_commit, std::move(message));
}

void put_hex(std::string& out, std::uint64_t value, std::size_t digits) {
    static constexpr char hex[] = "0123456789abcdef";
    for (std::size_t i = digits; i-- > 0;) out.push_back(hex[(value >> (4 * i)) & 15]);
}

bool visible_ascii(std::string_view id) {
    for (char c : id) {
        if (c < 0x21 || c > 0x7e) return false;
    }
    return true;
}

}  // namespace

result<std::uint64_t> parse_parts_count(std::string_view text) {
    const auto count = parse_canonical_decimal(text, max_snapshot_parts);
    if (!count || *count == 0 || *count > max_snapshot_parts) {
        return invalid_commit("Stream-Snapshot-Parts must be a decimal from 1 to 4096");
    }
    return *count;
}

result<std::vector<std::string>> parse_parts_list(std::string_view body, std::uint64_t count) {
    if (body.size() > count * (max_part_id_bytes + 1)) {
        return invalid_commit("the body is longer than a list of Stream-Snapshot-Parts part ids");
    }
    std::vector<std::string> ids;
    std::unordered_set<std::string_view> seen;
    while (!body.empty()) {
        const auto lf = body.find('\n');
        if (lf == std::string_view::npos)
            return invalid_commit("every part id must be followed by one LF");
        const std::string_view id = body.substr(0, lf);
        if (id.empty() || id.size() > max_part_id_bytes || !visible_ascii(id)) {
            return invalid_commit("a part id is 1 to 64 visible ASCII characters");
        }
        if (!seen.insert(id).second) return invalid_commit("a part id is listed more than once");
        ids.emplace_back(id);
        body.remove_prefix(lf + 1);
    }
    if (ids.size() != count) {
        return invalid_commit("the body does not list Stream-Snapshot-Parts part ids");
    }
    return ids;
}

std::string make_part_id(unix_ms staged_at, std::uint64_t random_high, std::uint64_t random_low) {
    std::string id;
    id.reserve(part_id_digits);
    put_hex(id, static_cast<std::uint64_t>(staged_at), time_digits);
    put_hex(id, random_high, part_id_digits - time_digits - 16);
    put_hex(id, random_low, 16);
    return id;
}

std::optional<unix_ms> part_staged_at(std::string_view id) {
    if (id.size() != part_id_digits) return std::nullopt;
    std::uint64_t at = 0;
    for (std::size_t i = 0; i < id.size(); ++i) {
        const char c = id[i];
        int nibble = -1;
        if (c >= '0' && c <= '9') nibble = c - '0';
        if (c >= 'a' && c <= 'f') nibble = c - 'a' + 10;
        if (nibble < 0) return std::nullopt;
        if (i < time_digits) at = at * 16 + static_cast<std::uint64_t>(nibble);
    }
    return static_cast<unix_ms>(at);
}

}  // namespace dstream::protocol
