#include "page_cache.h"

#include <fcntl.h>
#include <string>
#include <unistd.h>
#include <vector>

#include <sys/mman.h>

namespace dstream::test {

std::size_t cached_pages(const std::filesystem::path& path) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) return 0;
    const auto size = static_cast<std::size_t>(::lseek(fd, 0, SEEK_END));
    std::size_t cached = 0;
    if (size > 0) {
        void* map = ::mmap(nullptr, size, PROT_READ, MAP_SHARED, fd, 0);
        if (map != MAP_FAILED) {
            const auto page = static_cast<std::size_t>(::sysconf(_SC_PAGESIZE));
            std::vector<unsigned char> in_core((size + page - 1) / page);
            if (::mincore(map, size, in_core.data()) == 0) {
                for (const unsigned char c : in_core) cached += c & 1;
            }
            ::munmap(map, size);
        }
    }
    ::close(fd);
    return cached;
}

bool shows_dropped_pages(const std::filesystem::path& dir) {
    const std::filesystem::path probe = dir / "page-cache-probe";
    const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return false;
    const std::string bytes(64 * 1024, 'p');
    bool shows = ::write(fd, bytes.data(), bytes.size()) == static_cast<ssize_t>(bytes.size()) &&
                 ::fdatasync(fd) == 0 && cached_pages(probe) > 0 &&
                 ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED) == 0 && cached_pages(probe) == 0;
    ::close(fd);
    ::unlink(probe.c_str());
    return shows;
}

}  // namespace dstream::test
