// What one write + fdatasync costs on this disk, by how the file's blocks
// came to be: appended (the file grows, so the flush writes its inode too),
// overwritten after a zero fill (allocated and written: what a prepared WAL
// segment gives), overwritten after fallocate (allocated, unwritten: the
// flush converts the extent, a metadata write again), and overwritten after
// a zero fill through O_DIRECT (no page-cache copy or writeback: what a WAL
// writing around the page cache would pay).
//
//   build/disk_flush_bench DIR [COUNT] [BYTES]
//
// Prints, per mode, the wall and CPU time of one write + fdatasync. BYTES is
// rounded up to 4 KiB for the O_DIRECT mode, whose writes must be aligned.
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fcntl.h>
#include <memory>
#include <string>
#include <unistd.h>
#include <vector>

#include <sys/resource.h>

namespace {

double cpu_seconds() {
    rusage r{};
    getrusage(RUSAGE_SELF, &r);
    const auto s = [](const timeval& t) { return t.tv_sec + t.tv_usec / 1e6; };
    return s(r.ru_utime) + s(r.ru_stime);
}

constexpr std::size_t direct_alignment = 4096;

bool is_direct(const std::string& mode) { return mode == "zero-filled, O_DIRECT"; }

bool prepare(int fd, const std::string& mode, std::size_t total) {
    if (mode == "zero-filled" || is_direct(mode)) {
        const std::vector<char> zeros(1 << 20, '\0');
        for (std::size_t at = 0; at < total; at += zeros.size()) {
            if (pwrite(fd, zeros.data(), zeros.size(), static_cast<off_t>(at)) < 0) return false;
        }
    } else if (mode == "fallocated") {
        if (fallocate(fd, 0, 0, static_cast<off_t>(total)) != 0) return false;
    }
    return fsync(fd) == 0;
}

}  // namespace

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: %s DIR [COUNT] [BYTES]\n", argv[0]);
        return 2;
    }
    const std::string path = std::string(argv[1]) + "/flush_modes.tmp";
    const int count = argc > 2 ? std::atoi(argv[2]) : 3000;
    const std::size_t bytes = argc > 3 ? std::strtoul(argv[3], nullptr, 10) : 8192;
    for (const std::string mode :
         {"appended", "zero-filled", "fallocated", "zero-filled, O_DIRECT"}) {
        const std::size_t size =
            is_direct(mode) ? (bytes + direct_alignment - 1) / direct_alignment * direct_alignment
                            : bytes;
        // aligned_alloc takes whole multiples of the alignment.
        const std::size_t capacity =
            (size + direct_alignment - 1) / direct_alignment * direct_alignment;
        const std::unique_ptr<char, decltype(&std::free)> record(
            static_cast<char*>(std::aligned_alloc(direct_alignment, capacity)), &std::free);
        if (!record) {
            std::perror("aligned_alloc");
            return 1;
        }
        std::memset(record.get(), 'x', capacity);
        unlink(path.c_str());
        int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC, 0644);
        if (fd < 0 || !prepare(fd, mode, size * static_cast<std::size_t>(count))) {
            std::perror(path.c_str());
            return 1;
        }
        if (is_direct(mode)) {
            close(fd);
            fd = open(path.c_str(), O_RDWR | O_DIRECT);
            if (fd < 0) {
                std::perror("O_DIRECT");
                return 1;
            }
            // The zero fill's cached pages would otherwise be dropped by the
            // first direct writes, inside the timed loop.
            posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
        }
        const auto start = std::chrono::steady_clock::now();
        const double cpu_start = cpu_seconds();
        for (int i = 0; i < count; ++i) {
            const auto at = static_cast<off_t>(size) * i;
            if (pwrite(fd, record.get(), size, at) < 0 || fdatasync(fd) != 0) {
                std::perror(path.c_str());
                return 1;
            }
        }
        const double wall =
            std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
        const double cpu = cpu_seconds() - cpu_start;
        std::printf("%-21s %7.1f us wall, %6.1f us CPU per %zu-byte write + fdatasync\n",
                    mode.c_str(), wall / count * 1e6, cpu / count * 1e6, size);
        close(fd);
    }
    unlink(path.c_str());
    return 0;
}
