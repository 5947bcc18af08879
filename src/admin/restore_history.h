#pragma once
// The history id a restore gives a group (extensions 2.4 note: one per
// backup, whatever the number of attempts): a function of the backup's id
// and the group, so that every attempt of one restore proposes the same id
// and a group that applied one attempt ignores the others.
#include <cstdint>
#include <string_view>

namespace dstream::admin {

// BLAKE3-256 of a domain label, the backup id and the group, its first 8
// bytes little-endian; never 0 (the id of a group before its first command).
std::uint64_t restore_history_id(std::string_view backup_id, std::uint32_t group);

}  // namespace dstream::admin
