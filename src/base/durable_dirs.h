#pragma once
// Directories whose creation survives power loss: a new directory is only
// durable once the directory holding it was fsync'd.
#include <filesystem>
#include <system_error>

#include "base/file_io.h"

namespace dstream {

// fsync of a directory; false on failure.
bool fsync_directory(const std::filesystem::path& dir, file_io& io = posix_file_io());

// Makes `dir` and every directory between `base` and it durable: creates what
// is missing, then fsyncs the parent of each of them, whether this call
// created it or found it. A directory found may be one another thread created
// and has not synced yet, or one a crashed process never synced: trusting it
// would let a file written below it vanish with it at a power cut. A base
// that was gone (with ancestors of it) is made again and synced up to the
// nearest ancestor found: a caller's knowledge of what is durable may be
// stale.
// Returns false (with `ec` set when the creation itself failed) on failure.
bool create_durable_directories(const std::filesystem::path& base, const std::filesystem::path& dir,
                                std::error_code& ec, file_io& io = posix_file_io());

// The same from the nearest existing ancestor of `dir`'s parent: `dir` and
// every ancestor this call creates.
bool create_durable_directories(const std::filesystem::path& dir, std::error_code& ec,
                                file_io& io = posix_file_io());

}  // namespace dstream
