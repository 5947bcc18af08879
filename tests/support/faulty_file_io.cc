#include "faulty_file_io.h"

#include <algorithm>
#include <cstdio>
#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <stdexcept>
#include <unistd.h>

namespace dstream::test {
namespace {

namespace fs = std::filesystem;

std::string normal(const fs::path& path) {
    std::string p = fs::absolute(path).lexically_normal().string();
    while (p.size() > 1 && p.back() == '/') p.pop_back();
    return p;
}

std::string read_whole(const fs::path& path) {
    std::ifstream in(path, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace

faulty_file_io::faulty_file_io(fs::path root) : _root(normal(root)) {
    if (!fs::is_directory(_root)) throw std::invalid_argument(_root + " is no directory");
    std::lock_guard lock(_mutex);
    start_model();
}

void faulty_file_io::inject(file_op op, std::string path_part, fault f, int times, int skip) {
    std::lock_guard lock(_mutex);
    _rules.push_back(rule{op, std::move(path_part), f, times, skip});
}

void faulty_file_io::clear() {
    std::lock_guard lock(_mutex);
    _rules.clear();
}

void faulty_file_io::set_hook(hook h) {
    std::lock_guard lock(_mutex);
    _hook = std::move(h);
}

std::optional<fault> faulty_file_io::match(file_op op, const std::string& path) {
    for (auto it = _rules.begin(); it != _rules.end(); ++it) {
        if (it->op != op || path.find(it->path_part) == std::string::npos) continue;
        if (it->skip > 0) {
            --it->skip;
            continue;
        }
        const fault f = it->f;
        if (it->times > 0 && --it->times == 0) _rules.erase(it);
        ++_fired;
        return f;
    }
    return std::nullopt;
}

std::optional<fault> faulty_file_io::enter(file_op op, const std::string& path,
                                           std::unique_lock<std::mutex>& lock) {
    hook h;
    {
        std::lock_guard guard(_mutex);
        h = _hook;
    }
    if (h) h(op, path);
    lock = std::unique_lock(_mutex);
    return match(op, path);
}

std::string faulty_file_io::path_of(int fd) {
    std::lock_guard lock(_mutex);
    auto it = _fds.find(fd);
    return it == _fds.end() ? std::string() : it->second.path;
}

std::uint64_t faulty_file_io::id_of(ino_t ino) {
    auto [it, fresh] = _ids.try_emplace(ino, _next_id);
    if (fresh) _inodes[_next_id++];
    return it->second;
}

void faulty_file_io::record_listing(const std::string& dir) {
    auto& listing = _dirs[dir];
    listing.clear();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        struct stat st {};
        if (::lstat(e.path().c_str(), &st) != 0) continue;
        if (S_ISDIR(st.st_mode)) {
            listing[e.path().filename()] = entry{true, 0};
        } else if (S_ISREG(st.st_mode)) {
            listing[e.path().filename()] = entry{false, id_of(st.st_ino)};
        }
    }
}

void faulty_file_io::start_model() {
    _inodes.clear();
    _ids.clear();
    _dirs.clear();
    _fds.clear();
    _rules.clear();
    _hook = {};
    _cut = false;
    record_listing(_root);
    for (const auto& e : fs::recursive_directory_iterator(_root)) {
        const std::string p = normal(e.path());
        if (e.is_directory()) {
            record_listing(p);
        } else if (e.is_regular_file()) {
            struct stat st {};
            if (::stat(p.c_str(), &st) != 0) continue;
            inode& node = _inodes[id_of(st.st_ino)];
            node.durable = read_whole(p);
            node.path = p;
        }
    }
}

int faulty_file_io::open(const char* path, int flags, mode_t mode) {
    const std::string p = normal(path);
    std::unique_lock<std::mutex> lock;
    if (const auto f = enter(file_op::open, p, lock)) {
        errno = f->error;
        return -1;
    }
    const int fd = ::open(path, flags, mode);
    if (fd < 0) return -1;
    struct stat st {};
    ::fstat(fd, &st);
    descriptor d{p, 0, S_ISDIR(st.st_mode), 0};
    if (!d.directory) {
        d.id = id_of(st.st_ino);
        inode& node = _inodes[d.id];
        node.path = p;
        if ((flags & O_TRUNC) != 0) node.dirty.clear();
        // Errors made here are reported at once, so a new descriptor starts
        // with every earlier one seen.
        d.errors_seen = node.errors;
    }
    _fds[fd] = d;
    return fd;
}

int faulty_file_io::close(int fd) {
    std::lock_guard lock(_mutex);
    _fds.erase(fd);
    return ::close(fd);
}

ssize_t faulty_file_io::write(int fd, const void* data, std::size_t size) {
    const iovec one{const_cast<void*>(data), size};
    return write_at(fd, &one, 1, std::nullopt);
}

ssize_t faulty_file_io::pwritev(int fd, const iovec* iov, int count, off_t offset) {
    return write_at(fd, iov, count, offset);
}

ssize_t faulty_file_io::write_prefix(int fd, const iovec* iov, int count, std::size_t limit,
                                     std::optional<off_t> offset) {
    std::vector<iovec> prefix;
    for (int i = 0; i < count && limit > 0; ++i) {
        const std::size_t take = std::min(limit, iov[i].iov_len);
        prefix.push_back(iovec{iov[i].iov_base, take});
        limit -= take;
    }
    if (prefix.empty()) return 0;
    const int n = static_cast<int>(prefix.size());
    return offset ? ::pwritev(fd, prefix.data(), n, *offset) : ::writev(fd, prefix.data(), n);
}

void faulty_file_io::note_written(int fd, std::uint64_t first, std::uint64_t bytes) {
    auto it = _fds.find(fd);
    if (it == _fds.end()) return;
    _inodes[it->second.id].dirty.emplace_back(first, first + bytes);
}

ssize_t faulty_file_io::write_at(int fd, const iovec* iov, int count, std::optional<off_t> offset) {
    const std::string p = path_of(fd);
    std::unique_lock<std::mutex> lock;
    const auto f = enter(file_op::write, p, lock);
    if (f && f->what == fault::kind::fail) {
        errno = f->error;
        return -1;
    }
    std::size_t total = 0;
    for (int i = 0; i < count; ++i) total += iov[i].iov_len;
    const ssize_t n = write_prefix(fd, iov, count, f ? std::min(f->keep, total) : total, offset);
    if (n > 0) {
        const auto written = static_cast<std::uint64_t>(n);
        // Without an offset the descriptor's position moved past the bytes.
        const off_t first = offset ? *offset : ::lseek(fd, 0, SEEK_CUR) - n;
        if (first >= 0) note_written(fd, static_cast<std::uint64_t>(first), written);
    }
    if (f && f->what == fault::kind::torn_write) {
        errno = f->error;
        return -1;
    }
    return n;
}

ssize_t faulty_file_io::pread(int fd, void* data, std::size_t size, off_t offset) {
    const std::string p = path_of(fd);
    std::unique_lock<std::mutex> lock;
    if (const auto f = enter(file_op::read, p, lock)) {
        errno = f->error;
        return -1;
    }
    return ::pread(fd, data, size, offset);
}

int faulty_file_io::sync(int fd) {
    descriptor d;
    {
        std::lock_guard lock(_mutex);
        auto it = _fds.find(fd);
        if (it == _fds.end()) {
            errno = EBADF;
            return -1;
        }
        d = it->second;
    }
    std::unique_lock<std::mutex> lock;
    const auto f = enter(d.directory ? file_op::sync_dir : file_op::sync, d.path, lock);
    if (d.directory) {
        if (f) {
            errno = f->error;
            return -1;
        }
        if (!_cut) record_listing(d.path);
        return 0;
    }
    inode& node = _inodes[d.id];
    descriptor& live = _fds[fd];
    if (f) {
        // Linux marks the pages it failed to write clean: no later flush
        // writes them. Every other descriptor hears of it at its next flush.
        node.dirty.clear();
        live.errors_seen = ++node.errors;
        errno = f->error;
        return -1;
    }
    if (!_cut) {
        // The descriptor may be write-only: read the inode through /proc.
        const std::string self = "/proc/self/fd/" + std::to_string(fd);
        std::string durable = node.durable.value_or(std::string());
        const std::string now = read_whole(self);
        durable.resize(now.size(), '\0');
        for (const auto& [first, end] : node.dirty) {
            const auto stop = std::min<std::uint64_t>(end, now.size());
            if (first < stop) durable.replace(first, stop - first, now, first, stop - first);
        }
        node.durable = std::move(durable);
    }
    node.dirty.clear();
    if (live.errors_seen != node.errors) {
        live.errors_seen = node.errors;
        errno = EIO;
        return -1;
    }
    return 0;
}

int faulty_file_io::ftruncate(int fd, off_t size) {
    const std::string p = path_of(fd);
    std::unique_lock<std::mutex> lock;
    if (const auto f = enter(file_op::truncate, p, lock)) {
        errno = f->error;
        return -1;
    }
    if (::ftruncate(fd, size) != 0) return -1;
    if (auto it = _fds.find(fd); it != _fds.end()) {
        auto& dirty = _inodes[it->second.id].dirty;
        const auto limit = static_cast<std::uint64_t>(size);
        for (auto& r : dirty) r.second = std::min(r.second, limit);
        std::erase_if(dirty, [](const range& r) { return r.first >= r.second; });
    }
    return 0;
}

int faulty_file_io::fstat(int fd, struct stat* st) {
    const std::string p = path_of(fd);
    std::unique_lock<std::mutex> lock;
    if (const auto f = enter(file_op::stat, p, lock)) {
        errno = f->error;
        return -1;
    }
    return ::fstat(fd, st);
}

int faulty_file_io::stat(const char* path, struct stat* st) {
    std::unique_lock<std::mutex> lock;
    if (const auto f = enter(file_op::stat, normal(path), lock)) {
        errno = f->error;
        return -1;
    }
    return ::stat(path, st);
}

void faulty_file_io::forget(const struct stat& freed) {
    // A durable entry may still name the inode: it lives on in the model
    // under its id, and its number may go to a new file.
    if (S_ISREG(freed.st_mode) && freed.st_nlink == 1) _ids.erase(freed.st_ino);
}

int faulty_file_io::rename(const char* from, const char* to) {
    const std::string source = normal(from);
    const std::string target = normal(to);
    std::unique_lock<std::mutex> lock;
    if (const auto f = enter(file_op::rename, source + "\n" + target, lock)) {
        errno = f->error;
        return -1;
    }
    struct stat moved {};
    struct stat replaced {};
    const bool known = ::lstat(from, &moved) == 0;
    const bool replaces = ::lstat(to, &replaced) == 0 && replaced.st_ino != moved.st_ino;
    if (::rename(from, to) != 0) return -1;
    if (replaces) forget(replaced);
    if (known && S_ISREG(moved.st_mode)) _inodes[id_of(moved.st_ino)].path = target;
    return 0;
}

int faulty_file_io::unlink(const char* path) {
    const std::string p = normal(path);
    std::unique_lock<std::mutex> lock;
    if (const auto f = enter(file_op::unlink, p, lock)) {
        errno = f->error;
        return -1;
    }
    struct stat st {};
    const bool known = ::lstat(path, &st) == 0;
    if (::unlink(path) != 0) return -1;
    if (known) forget(st);
    return 0;
}

int faulty_file_io::mkdir(const char* path, mode_t mode) {
    std::unique_lock<std::mutex> lock;
    if (const auto f = enter(file_op::mkdir, normal(path), lock)) {
        errno = f->error;
        return -1;
    }
    return ::mkdir(path, mode);
}

void faulty_file_io::power_cut(const std::string& tear, std::size_t torn_bytes) {
    std::lock_guard lock(_mutex);
    if (_cut) return;
    _cut = true;
    if (tear.empty() || torn_bytes == 0) return;
    for (auto& [id, node] : _inodes) {
        if (node.path.find(tear) == std::string::npos || !fs::exists(node.path)) continue;
        std::string durable = node.durable.value_or(std::string());
        const std::string now = read_whole(node.path);
        std::size_t left = torn_bytes;
        for (const auto& [first, end] : node.dirty) {
            const auto stop = std::min<std::uint64_t>(end, now.size());
            if (left == 0) break;
            if (first >= stop) continue;
            const auto take = std::min<std::uint64_t>(stop - first, left);
            if (durable.size() < first + take) durable.resize(first + take, '\0');
            durable.replace(first, take, now, first, take);
            left -= take;
        }
        node.durable = std::move(durable);
    }
}

void faulty_file_io::crash() {
    std::lock_guard lock(_mutex);
    // What survived, parents before children: a path and its bytes, or
    // nothing for a directory. A directory whose entries were never synced
    // comes back empty.
    std::vector<std::pair<std::string, std::optional<std::string>>> survived;
    std::vector<std::string> pending{_root};
    while (!pending.empty()) {
        const std::string dir = pending.back();
        pending.pop_back();
        auto listing = _dirs.find(dir);
        if (listing == _dirs.end()) continue;
        for (const auto& [name, e] : listing->second) {
            const std::string p = dir + "/" + name;
            if (e.directory) {
                survived.emplace_back(p, std::nullopt);
                pending.push_back(p);
            } else {
                survived.emplace_back(p, _inodes[e.id].durable.value_or(std::string()));
            }
        }
    }
    for (const auto& e : fs::directory_iterator(_root)) fs::remove_all(e.path());
    for (const auto& [p, bytes] : survived) {
        if (!bytes) {
            fs::create_directory(p);
            continue;
        }
        std::ofstream out(p, std::ios::binary | std::ios::trunc);
        out.write(bytes->data(), static_cast<std::streamsize>(bytes->size()));
    }
    start_model();
}

}  // namespace dstream::test
