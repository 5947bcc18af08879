#pragma once
// What the page cache holds of a file, for tests of the files the server
// takes out of it once they are durable (base/file_io.h drop_cached_pages).
#include <cstddef>
#include <filesystem>

namespace dstream::test {

// Pages of the file at `path` the page cache holds (mincore of a mapping).
std::size_t cached_pages(const std::filesystem::path& path);

// Whether files in `dir` show their pages cached once written and lose them
// when dropped: not so on tmpfs, whose pages are the files. Tests of dropping
// skip where this is false, so that a pass means the pages went.
bool shows_dropped_pages(const std::filesystem::path& dir);

}  // namespace dstream::test
