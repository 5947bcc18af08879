#include "storage/local_dir_object_store.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

#include "base/durable_dirs.h"

namespace dstream::storage {
namespace {

namespace fs = std::filesystem;
using protocol::error_code;

// Errors name no path (extensions 11: no object keys in messages); the log has them.
error store_failure() { return make_error(error_code::cold_store_failed, "the cold store failed"); }

}  // namespace

local_dir_object_store::local_dir_object_store(fs::path root) : _root(std::move(root)) {
    std::error_code ec;
    if (!create_durable_directories(_root, ec))
        throw std::runtime_error("cannot create " + _root.string());
}

fs::path local_dir_object_store::path_of(const std::string& key) const { return _root / key; }

status local_dir_object_store::put(const std::string& key, std::string_view bytes) {
    const fs::path target = path_of(key);
    std::error_code ec;
    if (!create_durable_directories(_root, target.parent_path(), ec)) return store_failure();
    const fs::path tmp = target.string() + ".tmp";
    const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return store_failure();
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::write(fd, bytes.data() + done, bytes.size() - done);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    const bool written = done == bytes.size() && ::fdatasync(fd) == 0;
    ::close(fd);
    if (!written) {
        ::unlink(tmp.c_str());
        return store_failure();
    }
    fs::rename(tmp, target, ec);
    if (ec || !fsync_directory(target.parent_path())) return store_failure();
    return ok_status();
}

status local_dir_object_store::get(const std::string& key, std::uint64_t offset,
                                   std::uint64_t length, std::string& out) {
    const fs::path p = path_of(key);
    const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return store_failure();
    out.resize(length);
    std::size_t done = 0;
    while (done < length) {
        const ssize_t n =
            ::pread(fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    ::close(fd);
    if (done != length) return store_failure();
    return ok_status();
}

status local_dir_object_store::remove(const std::string& key) {
    std::error_code ec;
    fs::remove(path_of(key), ec);
    return ec ? status(store_failure()) : ok_status();
}

result<std::vector<std::string>> local_dir_object_store::list(const std::string& prefix) {
    std::vector<std::string> keys;
    std::error_code ec;
    const fs::path base = _root / prefix;
    if (!fs::exists(base, ec)) return keys;
    for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
        if (!it->is_regular_file()) continue;
        const std::string rel = fs::relative(it->path(), _root).string();
        if (rel.ends_with(".tmp")) continue;
        keys.push_back(rel);
    }
    if (ec) return store_failure();
    return keys;
}

}  // namespace dstream::storage
