#pragma once
// The file-system calls of the durable paths (WAL, checkpoints, the local
// object store, durable directories, node.meta), behind one interface so that
// tests can make them fail: a full disk, an I/O error, a short or torn write,
// a failed flush (tests/support/faulty_file_io.h). The server uses
// posix_file_io() everywhere: one virtual call per system call.
//
// Each call has the system call's contract: the same arguments, the same
// return value, errno set on failure. Reading a directory's entries is not
// here: listings change nothing and std::filesystem does them.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>

namespace dstream {

class file_io {
public:
    virtual ~file_io() = default;

    virtual int open(const char* path, int flags, mode_t mode = 0) = 0;
    virtual int close(int fd) = 0;
    virtual ssize_t write(int fd, const void* data, std::size_t size) = 0;
    virtual ssize_t pwritev(int fd, const iovec* iov, int count, off_t offset) = 0;
    virtual ssize_t pread(int fd, void* data, std::size_t size, off_t offset) = 0;
    virtual int fdatasync(int fd) = 0;
    // Also the sync of a directory opened with O_DIRECTORY.
    virtual int fsync(int fd) = 0;
    virtual int ftruncate(int fd, off_t size) = 0;
    virtual int fstat(int fd, struct stat* st) = 0;
    virtual int stat(const char* path, struct stat* st) = 0;
    virtual int rename(const char* from, const char* to) = 0;
    virtual int unlink(const char* path) = 0;
    virtual int mkdir(const char* path, mode_t mode) = 0;
    // posix_fadvise: returns 0 or an error number, errno untouched.
    virtual int fadvise(int fd, off_t offset, off_t length, int advice) = 0;
};

// The real calls; one instance for the process.
file_io& posix_file_io();

// Writes every byte of `bytes` at the descriptor's position, going on after
// short writes and EINTR; false on failure (errno says why, EIO for a write
// that wrote nothing and reported no error).
bool write_all(file_io& io, int fd, std::string_view bytes);

// Takes the file's pages out of the page cache, for a file whose bytes were
// flushed and that is rarely read again soon (a closed WAL segment, a chunk
// object, a checkpoint); a page dirtied since the flush is written back
// rather than dropped. Otherwise every byte written grows the page cache
// into memory the machine has not touched lately, and where the hypervisor
// takes back a guest's free memory (free page reporting, as on this
// project's VM) each such page costs a fault in the host: `dd` of 1 GiB into
// a new file took 2.9-7.7 s of system time that way, against 0.3 s into pages
// just freed. Dropped pages are freed at once and are the next write's.
void drop_cached_pages(file_io& io, int fd);

// Reads the whole file at `path` into `out`; false on failure (errno says why).
bool read_all(file_io& io, const char* path, std::string& out);

}  // namespace dstream
