#pragma once
// A backup's manifest (docs/disk-format.md, "Backups"): what the backup
// holds, each file with its size and BLAKE3-256, and each group's applied
// index. Text, one record a line, ending with a line that carries the
// BLAKE3-256 of every byte before it, so that a truncated or altered
// manifest is told from a whole one. Pure: no I/O.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace dstream::backup {

// The manifest's own name in a backup's location.
inline constexpr std::string_view manifest_name = "manifest";

struct group_entry {
    std::uint32_t group = 0;
    std::uint64_t index = 0;  // the applied index the backup holds the group at
    std::uint64_t term = 0;
    std::uint64_t history_id = 0;
    std::uint64_t streams = 0;
    bool operator==(const group_entry&) const = default;
};

struct file_entry {
    std::string path;    // relative to the backup's location
    std::uint64_t size = 0;
    std::string blake3;  // 64 lowercase hex digits
    bool operator==(const file_entry&) const = default;
};

struct manifest {
    std::string id;  // the backup id: 32 lowercase hex digits
    std::int64_t created_ms = 0;
    std::string cluster_id;
    std::uint32_t group_count = 0;
    std::vector<group_entry> groups;  // one per group, by group
    std::vector<file_entry> files;
    bool operator==(const manifest&) const = default;
};

// The file of group g's checkpoint image in a backup.
std::string group_image_path(std::uint32_t group);
// The file of a cold object (its key in the node's store) in a backup.
std::string object_path(std::string_view object_key);

// Whether `path` may name a file of a backup: relative, made of [A-Za-z0-9._-]
// segments separated by '/', none of them "." or "..".
bool is_valid_path(std::string_view path);
bool is_valid_backup_id(std::string_view id);

// The manifest's text; `m` must be valid (check() says why not).
std::string render(const manifest& m);
// Every rule render() assumes: a backup id, one entry per group of the
// count with its image file, valid and distinct paths, digests of 64 hex.
status check(const manifest& m);
// The manifest a text holds, refused when it is not whole (no end line, a
// digest that does not match, anything after it) or breaks a rule of check().
result<manifest> parse(std::string_view text);

// The file entry of `path`; null when the manifest lists none.
const file_entry* find_file(const manifest& m, std::string_view path);

}  // namespace dstream::backup
