#pragma once
// Directories whose creation survives power loss: a new directory is only
// durable once the directory holding it was fsync'd.
#include <filesystem>
#include <system_error>

namespace dstream {

// fsync of a directory; false on failure.
bool fsync_directory(const std::filesystem::path& dir);

// create_directories() that fsyncs the parent of every directory it made.
// Returns false (with `ec` set when the creation itself failed) on failure.
bool create_durable_directories(const std::filesystem::path& dir, std::error_code& ec);

}  // namespace dstream
