#pragma once
// Snapshot uploads in parts (extensions 2.2, "Upload in Parts"): the shape of
// a commit (Stream-Snapshot-Parts and the list of part ids in its body) and
// the part ids this server hands out.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "protocol/expiry.h"

namespace dstream::protocol {

// MAX_SNAPSHOT_PARTS: a commit names at most this many parts.
inline constexpr std::uint64_t max_snapshot_parts = 4096;
// A part id is 1 to 64 visible ASCII characters.
inline constexpr std::size_t max_part_id_bytes = 64;

// Stream-Snapshot-Parts: a canonical decimal from 1 to 4096, else 400
// INVALID_PARTS_COMMIT.
result<std::uint64_t> parse_parts_count(std::string_view text);

// A commit's body: exactly `count` distinct ids, each followed by one LF and
// nothing else. A body longer than any such list is refused before it is
// scanned. Errors are 400 INVALID_PARTS_COMMIT.
result<std::vector<std::string>> parse_parts_list(std::string_view body, std::uint64_t count);

// The ids this server gives parts: 32 lowercase hex digits, the staging time
// (ms since the epoch, 12 digits) then 80 random bits, so a part's age is
// known from its name without asking the store.
std::string make_part_id(unix_ms staged_at, std::uint64_t random_high, std::uint64_t random_low);
// The staging time of an id this server made; nothing for any other id.
std::optional<unix_ms> part_staged_at(std::string_view id);

}  // namespace dstream::protocol
