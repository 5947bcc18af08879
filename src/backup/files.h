#pragma once
// A backup's files in an object store (a directory, or an S3 prefix): each
// written, read or copied in pieces with its BLAKE3-256 computed on the way,
// so that an object of any size passes through a bounded buffer. Blocking:
// run on a thread of the caller's, never on a group or the edge.
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "backup/manifest.h"
#include "base/result.h"
#include "storage/object_store.h"

namespace dstream::backup {

// Bytes moved so far, for progress reports.
using progress_fn = std::function<void(std::uint64_t bytes)>;

// Writes `bytes` as the file `path`.
result<file_entry> put_file(storage::object_store& to, const std::string& path,
                            std::string_view bytes);
// Copies the object `key` of `from` into `to` as the file `path`.
result<file_entry> copy_object(storage::object_store& from, const std::string& key,
                               storage::object_store& to, const std::string& path,
                               const progress_fn& progress = {});
// Reads the file `entry` names whole, refused unless it has the listed size and digest.
result<std::string> read_checked(storage::object_store& from, const file_entry& entry);
// Copies the file `entry` names into `to` under `key`, which appears only
// when the bytes had the listed size and digest.
status restore_object(storage::object_store& from, const file_entry& entry,
                      storage::object_store& to, const std::string& key,
                      const progress_fn& progress = {});
// Whether the file `entry` names is there with the listed size and digest.
status check_file(storage::object_store& from, const file_entry& entry,
                  const progress_fn& progress = {});

}  // namespace dstream::backup
