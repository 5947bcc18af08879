#include "base/durable_dirs.h"

#include <cerrno>
#include <fcntl.h>
#include <vector>

namespace dstream {
namespace {

namespace fs = std::filesystem;

bool is_directory(const fs::path& p, file_io& io, int& failure) {
    struct stat st {};
    if (io.stat(p.c_str(), &st) != 0) {
        failure = errno;
        return false;
    }
    failure = S_ISDIR(st.st_mode) ? 0 : ENOTDIR;
    return failure == 0;
}

// std::filesystem::create_directories through `io`: `dir` and its missing
// ancestors, an existing non-directory on the way being an error. `topmost`
// becomes the highest directory it had to create, empty where none.
bool make_directories(fs::path dir, std::error_code& ec, file_io& io, fs::path& topmost) {
    if (dir.has_relative_path() && dir.filename().empty()) dir = dir.parent_path();
    std::vector<fs::path> missing;
    for (auto p = dir; !p.empty(); p = p.parent_path()) {
        int failure = 0;
        if (is_directory(p, io, failure)) break;
        if (failure != ENOENT) {
            ec.assign(failure, std::generic_category());
            return false;
        }
        missing.push_back(p);
        if (p == p.parent_path()) break;
    }
    if (!missing.empty()) topmost = missing.back();
    for (auto it = missing.rbegin(); it != missing.rend(); ++it) {
        // Another thread may make the same directory meanwhile.
        int failure = 0;
        if (io.mkdir(it->c_str(), 0777) != 0 &&
            (errno != EEXIST || !is_directory(*it, io, failure))) {
            ec.assign(failure != 0 ? failure : errno, std::generic_category());
            return false;
        }
    }
    return true;
}

}  // namespace

bool fsync_directory(const fs::path& dir, file_io& io) {
    const int fd = io.open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (fd < 0) return false;
    const bool ok = io.fsync(fd) == 0;
    io.close(fd);
    return ok;
}

bool create_durable_directories(const fs::path& base, const fs::path& dir, std::error_code& ec,
                                file_io& io) {
    fs::path topmost;
    if (!make_directories(dir, ec, io, topmost)) return false;
    bool past_base = false;
    for (auto p = dir; p.has_relative_path(); p = p.parent_path()) {
        past_base = past_base || p == base;
        const bool created = !topmost.empty() && p.native().size() >= topmost.native().size();
        if (past_base && !created) break;
        const auto parent = p.parent_path();
        if (!fsync_directory(parent.empty() ? "." : parent, io)) return false;
    }
    return true;
}

bool create_durable_directories(const fs::path& dir, std::error_code& ec, file_io& io) {
    // From its parent, the walk syncs what it creates above it as well.
    return create_durable_directories(dir.parent_path(), dir, ec, io);
}

}  // namespace dstream
