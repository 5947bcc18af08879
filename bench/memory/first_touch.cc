// What storing bytes in memory the process has not written before costs on
// this machine, per KiB, by how the memory was prepared: the copy of each
// 1 KiB append into a stream's hot tier pays it once per page. A virtual
// machine whose hypervisor traps the first write of a page (and backs guest
// memory on first touch) shows it as time in the copy or in the kernel's
// zeroing of the page.
//
//   build/first_touch_bench [MIB]      (default 256 MiB per mode)
//
// Each mode maps MIB fresh, prepares it, then fills it with 1 KiB memcpys.
// Prints, per mode, the CPU time per KiB of the preparation and of the
// fill (both are what a server storing that KiB pays), and last one JSON line.
#include <sys/mman.h>
#include <sys/resource.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

namespace {

double cpu_seconds() {
    rusage r{};
    getrusage(RUSAGE_SELF, &r);
    const auto s = [](const timeval& t) { return static_cast<double>(t.tv_sec) + static_cast<double>(t.tv_usec) / 1e6; };
    return s(r.ru_utime) + s(r.ru_stime);
}

struct mode {
    const char* key;  // in the JSON line
    const char* name;
    bool huge;      // MADV_HUGEPAGE over the mapping
    bool populate;  // MADV_POPULATE_WRITE before the fill
    bool written;   // written once before the fill: memory in use already
};

constexpr std::size_t kib = 1024;
constexpr std::size_t huge_page = std::size_t{2} << 20;

struct result {
    double prepare_us_per_kib;
    double fill_us_per_kib;
};

bool measure(const mode& m, std::size_t bytes, result& out) {
    // Over-map by a huge page so the used part can start on one.
    void* mapped = mmap(nullptr, bytes + huge_page, PROT_READ | PROT_WRITE,
                        MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (mapped == MAP_FAILED) return false;
    auto* base = reinterpret_cast<char*>(
        (reinterpret_cast<std::uintptr_t>(mapped) + huge_page - 1) & ~(huge_page - 1));
    if (m.huge) madvise(base, bytes, MADV_HUGEPAGE);
    std::vector<char> piece(kib, 'x');
    const double t0 = cpu_seconds();
    if (m.populate) madvise(base, bytes, MADV_POPULATE_WRITE);
    if (m.written) std::memset(base, 0, bytes);
    const double t1 = cpu_seconds();
    for (std::size_t at = 0; at + kib <= bytes; at += kib) std::memcpy(base + at, piece.data(), kib);
    const double t2 = cpu_seconds();
    munmap(mapped, bytes + huge_page);
    const double kibs = static_cast<double>(bytes / kib);
    out = {(t1 - t0) * 1e6 / kibs, (t2 - t1) * 1e6 / kibs};
    return true;
}

}  // namespace

int main(int argc, char** argv) {
    const std::size_t mib = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 256;
    if (mib == 0) {
        std::fprintf(stderr, "usage: %s [MIB]\n", argv[0]);
        return 2;
    }
    const mode modes[] = {
        {"fresh", "fresh 4 KiB pages", false, false, false},
        {"populated", "4 KiB pages, MADV_POPULATE_WRITE first", false, true, false},
        {"huge_populated", "2 MiB huge pages, MADV_POPULATE_WRITE first", true, true, false},
        {"written", "written before (the copy alone)", false, false, true},
    };
    std::string json = "{\"scenario\":\"first_touch\",\"mib\":" + std::to_string(mib);
    for (const mode& m : modes) {
        result r{};
        if (!measure(m, mib << 20, r)) {
            std::perror("mmap");
            return 1;
        }
        std::printf("%-45s prepare %7.3f + fill %7.3f = %7.3f us of CPU per KiB\n", m.name,
                    r.prepare_us_per_kib, r.fill_us_per_kib, r.prepare_us_per_kib + r.fill_us_per_kib);
        char field[160];
        std::snprintf(field, sizeof field, ",\"%s\":{\"prepare_us_per_kib\":%.4f,\"fill_us_per_kib\":%.4f}",
                      m.key, r.prepare_us_per_kib, r.fill_us_per_kib);
        json += field;
    }
    std::printf("%s}\n", json.c_str());
    return 0;
}
