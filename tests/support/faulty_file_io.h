#pragma once
// A file_io for tests: the real calls on a real directory, with faults on cue
// (an errno, a short write, a torn write, a failed flush, a failed rename)
// and a model of what a power cut would leave of the directory, so that a
// test can crash the node and reopen it on what survived.
//
// The model is POSIX's, as in tests/powerloss/shim.c:
//  - a file's bytes are durable as of its last successful fsync/fdatasync;
//  - a directory's entries are durable as of its last successful fsync; a
//    file created, renamed or unlinked is durable only once its directory is
//    synced, and a file's own fsync does not make its name durable;
//  - what is in the directory when the model starts counts as durable.
// A failed flush behaves as Linux's does: the pages it could not write are
// marked clean, so no later flush writes them (they are lost at a crash, the
// file keeping its size), and the error is reported once to each open
// descriptor of the file (errseq): the failing call, then every other
// descriptor open at the time, at its next flush.
//
// The real fsync is never called: the model decides what survives, and real
// flushes would only make the tests slow.
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <fcntl.h>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/file_io.h"

namespace dstream::test {

enum class file_op {
    open,
    write,     // write, pwritev
    read,      // pread
    sync,      // fsync or fdatasync of a file
    sync_dir,  // fsync of a directory
    truncate,  // ftruncate
    rename,    // matched on either path
    unlink,
    mkdir,
    stat,  // stat, fstat
};

struct fault {
    enum class kind {
        fail,         // the call does nothing and fails with `error`
        short_write,  // writes the first `keep` bytes and reports them (no error)
        torn_write,   // writes the first `keep` bytes, then fails with `error`
    };
    kind what = kind::fail;
    int error = EIO;
    std::size_t keep = 0;

    static fault fail(int error = EIO) { return {kind::fail, error, 0}; }
    static fault short_write(std::size_t keep) { return {kind::short_write, 0, keep}; }
    static fault torn_write(std::size_t keep, int error = EIO) {
        return {kind::torn_write, error, keep};
    }
};

class faulty_file_io final : public file_io {
public:
    // `root`: the directory the model covers (absolute); it must exist.
    explicit faulty_file_io(std::filesystem::path root);

    // The next `times` calls of `op` on a path containing `path_part`, after
    // `skip` such calls, suffer `f`; `times` < 0: every one until clear().
    void inject(file_op op, std::string path_part, fault f, int times = 1, int skip = 0);
    // Removes every fault still pending.
    void clear();
    // How many calls a fault hit so far.
    int fired() const { return _fired.load(); }

    // Called first in every call, with the call's path (a descriptor's: the
    // path it was opened with), outside any lock: a test can block a thread
    // there to order calls that run on different threads.
    using hook = std::function<void(file_op, const std::string& path)>;
    void set_hook(hook h);

    // The power goes now: what survives is decided at this moment, and the
    // calls that follow change the directory but not what a crash leaves.
    // Files whose path contains `tear` keep `torn_bytes` more of the bytes
    // written since their last flush, in the order they were written (the
    // disk wrote part of them).
    void power_cut(const std::string& tear = {}, std::size_t torn_bytes = 0);
    // Once nothing uses the directory any more: makes it what the power cut
    // (or, without one, a cut now) left, and starts again on a healthy disk
    // with no faults, no hook, and everything now there durable.
    void crash();

    int open(const char* path, int flags, mode_t mode) override;
    int close(int fd) override;
    ssize_t write(int fd, const void* data, std::size_t size) override;
    ssize_t pwritev(int fd, const iovec* iov, int count, off_t offset) override;
    ssize_t pread(int fd, void* data, std::size_t size, off_t offset) override;
    int fdatasync(int fd) override { return sync(fd); }
    int fsync(int fd) override { return sync(fd); }
    int ftruncate(int fd, off_t size) override;
    int fstat(int fd, struct stat* st) override;
    int stat(const char* path, struct stat* st) override;
    int rename(const char* from, const char* to) override;
    int unlink(const char* path) override;
    int mkdir(const char* path, mode_t mode) override;
    // Advice changes nothing a crash leaves: passed on, never faulted.
    int fadvise(int fd, off_t offset, off_t length, int advice) override {
        return ::posix_fadvise(fd, offset, length, advice);
    }

private:
    using range = std::pair<std::uint64_t, std::uint64_t>;  // [first, end)

    struct inode {
        std::optional<std::string> durable;  // none: never flushed
        std::vector<range> dirty;            // written since the last flush
        std::uint64_t errors = 0;            // writeback errors so far
        std::string path;                    // the name it was last opened or renamed to
    };
    struct descriptor {
        std::string path;
        std::uint64_t id = 0;
        bool directory = false;
        std::uint64_t errors_seen = 0;
    };
    struct entry {
        bool directory = false;
        std::uint64_t id = 0;
    };
    struct rule {
        file_op op;
        std::string path_part;
        fault f;
        int times;
        int skip;
    };

    // The fault a call of `op` on `path` suffers, if any (with the lock held).
    std::optional<fault> match(file_op op, const std::string& path);
    // Calls the hook, then takes the lock and matches a fault.
    std::optional<fault> enter(file_op op, const std::string& path,
                               std::unique_lock<std::mutex>& lock);
    std::string path_of(int fd);
    std::uint64_t id_of(ino_t ino);
    void start_model();
    void record_listing(const std::string& dir);
    // Writes at `offset`, or at the descriptor's position (none).
    ssize_t write_at(int fd, const iovec* iov, int count, std::optional<off_t> offset);
    void note_written(int fd, std::uint64_t first, std::uint64_t bytes);
    // A file removed or replaced: its inode number is free.
    void forget(const struct stat& freed);
    int sync(int fd);
    ssize_t write_prefix(int fd, const iovec* iov, int count, std::size_t limit,
                         std::optional<off_t> offset);

    const std::string _root;
    std::mutex _mutex;
    hook _hook;
    std::vector<rule> _rules;
    std::atomic<int> _fired{0};
    bool _cut = false;
    std::uint64_t _next_id = 1;
    std::map<std::uint64_t, inode> _inodes;
    std::map<ino_t, std::uint64_t> _ids;                        // live inodes
    std::map<std::string, std::map<std::string, entry>> _dirs;  // durable entries by directory
    std::map<int, descriptor> _fds;
};

}  // namespace dstream::test
