#include "storage/local_dir_object_store.h"

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

#include <sys/stat.h>

#include "base/durable_dirs.h"

namespace dstream::storage {
namespace {

namespace fs = std::filesystem;
using protocol::error_code;

// Errors name no path (extensions 11: no object keys in messages); the log has them.
error store_failure() { return make_error(error_code::cold_store_failed, "the cold store failed"); }

constexpr std::string_view temporary_suffix = ".tmp";

// Writes to a temporary file beside the target; finish() syncs and renames
// it, so readers and list() never see a partial object.
class file_writer final : public object_writer {
public:
    file_writer(file_io& io, fs::path target, fs::path temporary, int fd)
        : _io(io), _target(std::move(target)), _temporary(std::move(temporary)), _fd(fd) {}

    ~file_writer() override {
        if (_fd >= 0) _io.close(_fd);
        if (!_finished) _io.unlink(_temporary.c_str());
    }

    status write(std::string_view bytes) override {
        if (_fd < 0 || !write_all(_io, _fd, bytes)) return store_failure();
        return ok_status();
    }

    status finish() override {
        if (_fd < 0) return store_failure();
        const bool synced = _io.fdatasync(_fd) == 0;
        // Readers of cold bytes are few and come later; the file stays warm
        // only where they read it.
        if (synced) drop_cached_pages(_io, _fd);
        _io.close(_fd);
        _fd = -1;
        if (!synced) return store_failure();
        if (_io.rename(_temporary.c_str(), _target.c_str()) != 0) return store_failure();
        _finished = true;
        if (!fsync_directory(_target.parent_path(), _io)) return store_failure();
        return ok_status();
    }

private:
    file_io& _io;
    fs::path _target;
    fs::path _temporary;
    int _fd;
    bool _finished = false;
};

}  // namespace

local_dir_object_store::local_dir_object_store(fs::path root, file_io& io)
    : _root(std::move(root)), _io(io) {
    // Without a trailing separator, so that walking up from a key's
    // directory meets the root.
    if (!_root.has_filename() && _root.has_relative_path()) _root = _root.parent_path();
    std::error_code ec;
    if (!create_durable_directories(_root, ec, _io))
        throw std::runtime_error("cannot create " + _root.string());
}

fs::path local_dir_object_store::path_of(const std::string& key) const { return _root / key; }

result<std::unique_ptr<object_writer>> local_dir_object_store::open_writer(const std::string& key) {
    // Writers of one key may overlap (a repeated flush, a publish racing a
    // commit of the same snapshot): each gets its own temporary file.
    static std::atomic<std::uint64_t> next_temporary{0};
    fs::path target = path_of(key);
    const fs::path dir = target.parent_path();
    if (!make_durable(dir)) return store_failure();
    fs::path temporary =
        target.string() + "." + std::to_string(next_temporary++) + std::string(temporary_suffix);
    constexpr int flags = O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC;
    int fd = _io.open(temporary.c_str(), flags, 0644);
    if (fd < 0 && errno == ENOENT) {
        forget_durable(dir);
        if (!make_durable(dir)) return store_failure();
        fd = _io.open(temporary.c_str(), flags, 0644);
    }
    if (fd < 0) return store_failure();
    return std::unique_ptr<object_writer>(
        std::make_unique<file_writer>(_io, std::move(target), std::move(temporary), fd));
}

bool local_dir_object_store::make_durable(const fs::path& dir) {
    // A stream's chunks share a directory below one of the stream's own (two
    // entries a stream): half this many streams flushing in turn each sync
    // one directory per put; the set stays under about 4 MB.
    constexpr std::size_t most_remembered = 32768;
    // Only what lies below the nearest directory already durable needs
    // syncing: a new stream's first put syncs its bucket and its own
    // directory, not every one up to the root (each sync is a device flush).
    fs::path known = _root;
    {
        std::lock_guard lock(_durable_mutex);
        if (_durable_dirs.contains(dir.native())) return true;
        for (auto p = dir.parent_path(); p != _root && p.has_relative_path(); p = p.parent_path()) {
            if (_durable_dirs.contains(p.native())) {
                known = p;
                break;
            }
        }
    }
    std::error_code ec;
    if (!create_durable_directories(known, dir, ec, _io)) return false;
    std::lock_guard lock(_durable_mutex);
    if (_durable_dirs.size() >= most_remembered) _durable_dirs.clear();
    for (auto p = dir; p != known && p.has_relative_path(); p = p.parent_path()) {
        _durable_dirs.insert(p.native());
    }
    return true;
}

void local_dir_object_store::forget_durable(const fs::path& dir) {
    std::lock_guard lock(_durable_mutex);
    _durable_dirs.erase(dir.native());
}

status local_dir_object_store::put(const std::string& key, std::string_view bytes) {
    auto writer = open_writer(key);
    if (!writer) return writer.err();
    if (auto written = (*writer)->write(bytes); !written) return written;
    return (*writer)->finish();
}

status local_dir_object_store::get(const std::string& key, std::uint64_t offset,
                                   std::uint64_t length, std::string& out) {
    const fs::path p = path_of(key);
    const int fd = _io.open(p.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return store_failure();
    out.resize(length);
    std::size_t done = 0;
    while (done < length) {
        const ssize_t n =
            _io.pread(fd, out.data() + done, length - done, static_cast<off_t>(offset + done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    _io.close(fd);
    if (done != length) return store_failure();
    return ok_status();
}

std::shared_ptr<const object_file> local_dir_object_store::open_file(const std::string& key) {
    const int fd = _io.open(path_of(key).c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return nullptr;
    return std::make_shared<const object_file>(_io, fd);
}

result<std::optional<std::uint64_t>> local_dir_object_store::size(const std::string& key) {
    struct stat st {};
    if (_io.stat(path_of(key).c_str(), &st) != 0) {
        if (errno == ENOENT || errno == ENOTDIR) return std::optional<std::uint64_t>();
        return store_failure();
    }
    if (!S_ISREG(st.st_mode)) return std::optional<std::uint64_t>();
    return std::optional<std::uint64_t>(static_cast<std::uint64_t>(st.st_size));
}

status local_dir_object_store::remove(const std::string& key) {
    if (_io.unlink(path_of(key).c_str()) != 0 && errno != ENOENT) return store_failure();
    return ok_status();
}

result<std::vector<object_entry>> local_dir_object_store::list(const std::string& prefix) {
    std::vector<object_entry> entries;
    std::error_code ec;
    const fs::path base = _root / prefix;
    if (!fs::exists(base, ec)) return entries;
    for (auto it = fs::recursive_directory_iterator(base, ec); !ec && it != fs::end(it);
         it.increment(ec)) {
        // An object removed while the listing runs is simply not listed.
        std::error_code gone;
        if (!it->is_regular_file(gone)) continue;
        // By the names alone: resolving them on the disk (fs::relative)
        // throws for one removed meanwhile.
        std::string rel = it->path().lexically_relative(_root).string();
        if (rel.ends_with(temporary_suffix)) continue;
        const std::uint64_t bytes = it->file_size(gone);
        if (gone) continue;
        const auto written = it->last_write_time(gone);
        if (gone) continue;
        const auto modified = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::file_clock::to_sys(written).time_since_epoch());
        entries.push_back(object_entry{std::move(rel), bytes, modified.count()});
    }
    if (ec) return store_failure();
    return entries;
}

}  // namespace dstream::storage
