#include "base/durable_dirs.h"

#include <fcntl.h>
#include <unistd.h>

#include <vector>

namespace dstream {

bool fsync_directory(const std::filesystem::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::fsync(fd) == 0;
    ::close(fd);
    return ok;
}

bool create_durable_directories(const std::filesystem::path& dir, std::error_code& ec) {
    std::vector<std::filesystem::path> missing;
    for (auto p = dir; !p.empty() && !std::filesystem::exists(p, ec); p = p.parent_path()) {
        missing.push_back(p);
        if (p == p.parent_path()) break;
    }
    std::filesystem::create_directories(dir, ec);
    if (ec) return false;
    for (const auto& made : missing) {
        if (!fsync_directory(made.parent_path().empty() ? "." : made.parent_path())) return false;
    }
    return true;
}

}  // namespace dstream
