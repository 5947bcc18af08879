#include "base/file_io.h"

#include <cerrno>
#include <cstdio>
#include <fcntl.h>
#include <unistd.h>

namespace dstream {
namespace {

class posix_io final : public file_io {
public:
    int open(const char* path, int flags, mode_t mode) override {
        return ::open(path, flags, mode);
    }
    int close(int fd) override { return ::close(fd); }
    ssize_t write(int fd, const void* data, std::size_t size) override {
        return ::write(fd, data, size);
    }
    ssize_t pwritev(int fd, const iovec* iov, int count, off_t offset) override {
        return ::pwritev(fd, iov, count, offset);
    }
    ssize_t pread(int fd, void* data, std::size_t size, off_t offset) override {
        return ::pread(fd, data, size, offset);
    }
    int fdatasync(int fd) override { return ::fdatasync(fd); }
    int fsync(int fd) override { return ::fsync(fd); }
    int ftruncate(int fd, off_t size) override { return ::ftruncate(fd, size); }
    int fstat(int fd, struct stat* st) override { return ::fstat(fd, st); }
    int stat(const char* path, struct stat* st) override { return ::stat(path, st); }
    int rename(const char* from, const char* to) override { return ::rename(from, to); }
    int unlink(const char* path) override { return ::unlink(path); }
    int mkdir(const char* path, mode_t mode) override { return ::mkdir(path, mode); }
    int fadvise(int fd, off_t offset, off_t length, int advice) override {
        return ::posix_fadvise(fd, offset, length, advice);
    }
};

}  // namespace

file_io& posix_file_io() {
    static posix_io io;
    return io;
}

bool write_all(file_io& io, int fd, std::string_view bytes) {
    while (!bytes.empty()) {
        const ssize_t n = io.write(fd, bytes.data(), bytes.size());
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n == 0) errno = EIO;
            return false;
        }
        bytes.remove_prefix(static_cast<std::size_t>(n));
    }
    return true;
}

void drop_cached_pages(file_io& io, int fd) {
    // Advice only: a file system that cannot drop pages keeps them.
    (void)io.fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
}

bool read_all(file_io& io, const char* path, std::string& out) {
    const int fd = io.open(path, O_RDONLY | O_CLOEXEC);
    struct stat st {};
    if (fd < 0) return false;
    if (io.fstat(fd, &st) != 0) {
        const int failure = errno;
        io.close(fd);
        errno = failure;
        return false;
    }
    out.assign(static_cast<std::size_t>(st.st_size), '\0');
    std::size_t done = 0;
    while (done < out.size()) {
        const ssize_t n = io.pread(fd, out.data() + done, out.size() - done, static_cast<off_t>(done));
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) break;
        done += static_cast<std::size_t>(n);
    }
    const int failure = errno;
    io.close(fd);
    if (done != out.size()) {
        errno = failure != 0 ? failure : EIO;
        return false;
    }
    return true;
}

}  // namespace dstream
