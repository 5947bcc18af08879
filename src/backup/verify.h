#pragma once
// `dstream backup verify`: a backup is whole when its manifest is (its end
// line's digest matches), every file it lists is there with its size and
// BLAKE3-256, every group's image decodes as that group's checkpoint, and
// every cold object an image references is among the files.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "backup/files.h"
#include "backup/manifest.h"
#include "storage/object_store.h"

namespace dstream::backup {

struct verify_report {
    std::optional<manifest> found;   // none when the manifest is missing or not whole
    std::vector<std::string> problems;  // empty: the backup is whole
    std::uint64_t files_checked = 0;
    std::uint64_t bytes_checked = 0;
    bool whole() const { return found.has_value() && problems.empty(); }
};

verify_report verify_backup(storage::object_store& location, const progress_fn& progress = {});

// The cold objects a group's checkpoint image references (chunks, snapshot
// bodies), after checking that it decodes as group `group`'s.
result<std::vector<std::string>> objects_of_image(std::string_view image, std::uint32_t group);

}  // namespace dstream::backup
