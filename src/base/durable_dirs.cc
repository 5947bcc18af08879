#include "base/durable_dirs.h"

#include <fcntl.h>
#include <unistd.h>

namespace dstream {

bool fsync_directory(const std::filesystem::path& dir) {
    const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = ::fsync(fd) == 0;
    ::close(fd);
    return ok;
}

bool create_durable_directories(const std::filesystem::path& base, const std::filesystem::path& dir,
                                std::error_code& ec) {
    std::filesystem::create_directories(dir, ec);
    if (ec) return false;
    for (auto p = dir; p != base && p.has_relative_path(); p = p.parent_path()) {
        const auto parent = p.parent_path();
        if (!fsync_directory(parent.empty() ? "." : parent)) return false;
    }
    return true;
}

bool create_durable_directories(const std::filesystem::path& dir, std::error_code& ec) {
    auto base = dir.parent_path();
    while (!base.empty() && base != base.parent_path() && !std::filesystem::exists(base, ec)) {
        base = base.parent_path();
    }
    return create_durable_directories(base, dir, ec);
}

}  // namespace dstream
