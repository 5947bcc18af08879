#include "storage/hot_bytes.h"
#include "base/huge_pages.h"

#include <gtest/gtest.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <limits>
#include <random>
#include <string>
#include <vector>

namespace dstream::storage {
namespace {

constexpr std::uint64_t no_limit = std::numeric_limits<std::uint64_t>::max();

// Deterministic, position-dependent content, so a misplaced byte shows.
std::string pattern(std::size_t n, std::size_t salt = 0) {
    std::string s(n, '\0');
    for (std::size_t i = 0; i < n; ++i) s[i] = static_cast<char>((i * 131 + salt * 7 + (i >> 8)) & 0xff);
    return s;
}

std::string read_all(const hot_bytes& h, std::uint64_t from, std::uint64_t max,
                     std::uint64_t* next = nullptr, std::size_t* slices = nullptr) {
    std::vector<byte_slice> out;
    const std::uint64_t n = h.read(from, max, out);
    if (next) *next = n;
    if (slices) *slices = out.size();
    std::string s;
    for (const auto& sl : out) {
        EXPECT_GT(sl.size, 0u) << "empty slice";
        EXPECT_EQ(sl.view().size(), sl.size);
        s.append(sl.view());
    }
    return s;
}

TEST(HotBytes, EmptyStore) {
    hot_bytes h;
    EXPECT_EQ(h.begin_offset(), 0u);
    EXPECT_EQ(h.end_offset(), 0u);
    EXPECT_EQ(h.capacity_bytes(), 0u);
    std::uint64_t next = 99;
    std::size_t slices = 99;
    EXPECT_EQ(read_all(h, 0, 100, &next, &slices), "");
    EXPECT_EQ(next, 0u);
    EXPECT_EQ(slices, 0u);
    h.append("");
    EXPECT_EQ(h.end_offset(), 0u);
    EXPECT_EQ(h.capacity_bytes(), 0u);
}

TEST(HotBytes, SingleAppendsOfBoundarySizes) {
    for (std::size_t n : {1u, 1023u, 1024u, 1025u, 2048u, 4097u, (1u << 20) - 1, 1u << 20,
                          (1u << 20) + 1, 3u << 20}) {
        SCOPED_TRACE(n);
        hot_bytes h;
        const std::string data = pattern(n);
        h.append(data);
        EXPECT_EQ(h.end_offset(), n);
        EXPECT_GE(h.capacity_bytes(), n);
        EXPECT_EQ(read_all(h, 0, no_limit), data);
        EXPECT_EQ(h.byte_at(0), data[0]);
        EXPECT_EQ(h.byte_at(n - 1), data[n - 1]);
    }
}

TEST(HotBytes, RepeatedAppendsOfBoundarySizesAcrossBlocks) {
    for (std::size_t n : {1u, 1023u, 1024u, 1025u}) {
        SCOPED_TRACE(n);
        hot_bytes h;
        std::string all;
        for (int i = 0; all.size() < 40000; ++i) {
            const std::string part = pattern(n, static_cast<std::size_t>(i));
            h.append(part);
            all += part;
            ASSERT_EQ(h.end_offset(), all.size());
        }
        EXPECT_EQ(read_all(h, 0, no_limit), all);
        for (std::size_t off = 0; off < all.size(); off += 97) {
            ASSERT_EQ(h.byte_at(off), all[off]) << off;
        }
        // Every block boundary region.
        for (std::size_t off = 1000; off < all.size() && off < 9000; ++off) {
            ASSERT_EQ(h.byte_at(off), all[off]) << off;
        }
    }
}

// Pieces of sizes that straddle the 64 KiB steps by which a block's pages
// are faulted in ahead of the copies, over blocks of up to 1 MiB.
TEST(HotBytes, AppendsAcrossThePrefaultStepsReadBackWhole) {
    hot_bytes h;
    std::string all;
    std::mt19937 rng(7);
    std::uniform_int_distribution<std::size_t> size(1, 70000);
    for (int i = 0; all.size() < (std::size_t{3} << 20); ++i) {
        const std::string part = pattern(size(rng), static_cast<std::size_t>(i));
        h.append(part);
        all += part;
    }
    ASSERT_EQ(h.end_offset(), all.size());
    EXPECT_EQ(read_all(h, 0, no_limit), all);
}

// The pages ahead of the last byte of a block past 64 KiB are faulted in
// before an append writes them: the appends do not take one fault per page.
// (ctest runs each test in a process of its own, where the block is fresh
// memory; after other tests the allocator may hand out pages already used.)
TEST(HotBytes, ThePagesAheadOfALargeBlocksEndAreResident) {
    hot_bytes h;
    const std::string kib = pattern(1024);
    // Blocks of 1 KiB doubling: at 200 KiB the last holds 128 KiB, 73 used.
    for (int i = 0; i < 200; ++i) h.append(kib);
    std::vector<byte_slice> out;
    h.read(h.end_offset() - 1, 1, out);
    ASSERT_EQ(out.size(), 1u);
    const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::uintptr_t ahead = (reinterpret_cast<std::uintptr_t>(out[0].data) + 48 * 1024) & ~(page - 1);
    unsigned char resident = 0;
    ASSERT_EQ(mincore(reinterpret_cast<void*>(ahead), page, &resident), 0);
    EXPECT_EQ(resident & 1, 1) << "the page 48 KiB ahead of the end is not resident";
}

TEST(HotBytes, MixedAppendsIncludingThreeMiB) {
    hot_bytes h;
    std::string all;
    const std::size_t sizes[] = {1, 1023, 1024, 1025, 3u << 20, 7, 1u << 20, 0, 5000};
    std::size_t salt = 0;
    for (std::size_t n : sizes) {
        const std::string part = pattern(n, ++salt);
        h.append(part);
        all += part;
        ASSERT_EQ(h.end_offset(), all.size());
    }
    EXPECT_EQ(read_all(h, 0, no_limit), all);
    // A 1 MiB block cap: a read of everything needs several slices.
    std::size_t slices = 0;
    read_all(h, 0, no_limit, nullptr, &slices);
    EXPECT_GE(slices, 4u);
    std::mt19937_64 rng(5);
    for (int i = 0; i < 2000; ++i) {
        const std::uint64_t off = rng() % all.size();
        ASSERT_EQ(h.byte_at(off), all[off]) << off;
    }
}

TEST(HotBytes, ReadSlicesForManyFromMaxPairs) {
    hot_bytes h;
    std::string all;
    std::mt19937_64 rng(11);
    // Appends of random sizes up to a few blocks, crossing many boundaries.
    while (all.size() < (2u << 20) + 12345) {
        const std::size_t n = 1 + rng() % 70000;
        const std::string part = pattern(n, all.size());
        h.append(part);
        all += part;
    }
    const std::uint64_t end = all.size();
    std::vector<std::pair<std::uint64_t, std::uint64_t>> cases = {
        {0, 0}, {0, 1}, {0, 1023}, {0, 1024}, {0, 1025}, {1023, 2}, {1024, 1024}, {end, 0},
        {end, 10}, {end - 1, 1}, {end - 1, 100}, {0, end}, {0, end + 1}, {5, no_limit},
        {end / 2, no_limit}, {1, no_limit - 1},
    };
    for (int i = 0; i < 1500; ++i) {
        const std::uint64_t from = rng() % (end + 1);
        const std::uint64_t max = rng() % 4 == 0 ? rng() : rng() % 300000;
        cases.emplace_back(from, max);
    }
    for (const auto& [from, max] : cases) {
        SCOPED_TRACE(testing::Message() << "from " << from << " max " << max);
        std::uint64_t next = 0;
        const std::string got = read_all(h, from, max, &next);
        const std::uint64_t want_len = std::min<std::uint64_t>(max, end - from);
        ASSERT_EQ(next, from + want_len);
        ASSERT_EQ(got.size(), want_len);
        ASSERT_EQ(got, all.substr(from, want_len));
    }
}

TEST(HotBytes, ConsecutiveReadsConcatenateToTheWholeStream) {
    hot_bytes h;
    std::string all;
    for (std::size_t i = 0; i < 300; ++i) {
        const std::string part = pattern(1 + (i * 37) % 3000, i);
        h.append(part);
        all += part;
    }
    for (std::uint64_t chunk : {1ULL, 7ULL, 1000ULL, 1024ULL, 65536ULL}) {
        std::string joined;
        std::uint64_t from = 0;
        while (from < h.end_offset()) {
            std::uint64_t next = 0;
            joined += read_all(h, from, chunk, &next);
            ASSERT_GT(next, from);
            from = next;
        }
        EXPECT_EQ(joined, all) << chunk;
    }
}

TEST(HotBytes, ReadAppendsToTheOutputVector) {
    hot_bytes h;
    h.append("hello");
    std::vector<byte_slice> out;
    h.read(0, 2, out);
    h.read(2, 3, out);
    ASSERT_EQ(out.size(), 2u);
    EXPECT_EQ(out[0].view(), "he");
    EXPECT_EQ(out[1].view(), "llo");
}

// A large append's string becomes a block as it is: reads see its bytes,
// later appends go after it, and a slice keeps it alive.
TEST(HotBytes, ALargeStringIsKeptWithoutACopy) {
    hot_bytes h(10);
    h.append(std::string_view("ab"));
    std::string large(huge_page_buffer_bytes + 5, 'L');
    const char* where = large.data();
    h.append_owned(std::move(large));
    h.append_owned(std::string("cd"));
    ASSERT_EQ(h.end_offset(), 10 + 2 + huge_page_buffer_bytes + 5 + 2);
    std::vector<byte_slice> slices;
    h.read(12, huge_page_buffer_bytes + 5, slices);
    ASSERT_EQ(slices.size(), 1u);
    EXPECT_EQ(slices[0].data, where);
    EXPECT_EQ(h.byte_at(11), 'b');
    EXPECT_EQ(h.byte_at(12 + huge_page_buffer_bytes + 5), 'c');
    h = hot_bytes();
    EXPECT_EQ(slices[0].view(), std::string(huge_page_buffer_bytes + 5, 'L'));
}

TEST(HotBytes, NonZeroBaseOffset) {
    const std::uint64_t base = 1'000'000'007;
    hot_bytes h(base);
    EXPECT_EQ(h.begin_offset(), base);
    EXPECT_EQ(h.end_offset(), base);
    EXPECT_EQ(read_all(h, base, 10), "");
    const std::string data = pattern(5000);
    h.append(data.substr(0, 1500));
    h.append(data.substr(1500));
    EXPECT_EQ(h.end_offset(), base + 5000);
    EXPECT_EQ(read_all(h, base, no_limit), data);
    EXPECT_EQ(read_all(h, base + 1024, 10), data.substr(1024, 10));
    EXPECT_EQ(h.byte_at(base + 4999), data[4999]);
    EXPECT_EQ(h.byte_at(base), data[0]);
}

TEST(HotBytes, SlicesStayValidAfterLaterAppendsAndAfterTheStoreIsGone) {
    std::vector<byte_slice> held;
    std::string expected;
    {
        hot_bytes h;
        h.append(pattern(1000, 1));
        h.read(0, no_limit, held);
        expected = pattern(1000, 1);
        // Grow far past the first block: the slice must not move.
        for (int i = 0; i < 50; ++i) h.append(pattern(50000, static_cast<std::size_t>(i)));
        ASSERT_EQ(held.size(), 1u);
        EXPECT_EQ(held[0].view(), expected);
    }
    // The store is destroyed; the slice keeps its block alive.
    EXPECT_EQ(held[0].view(), expected);
}

TEST(HotBytes, CapacityGrowsGeometricallyAndIsBounded) {
    hot_bytes h;
    h.append("x");
    EXPECT_EQ(h.capacity_bytes(), 1024u);  // the smallest block
    std::size_t total = 1;
    while (total < (8u << 20)) {
        h.append(pattern(4096));
        total += 4096;
    }
    // Doubling blocks capped at 1 MiB waste at most one block plus a factor of two.
    EXPECT_LE(h.capacity_bytes(), 2 * total + (1u << 20));
    EXPECT_GE(h.capacity_bytes(), total);
}

TEST(HotBytesTrim, ReleasesOnlyFullBlocksEntirelyBelowTheOffset) {
    hot_bytes h;
    const std::string data = pattern(5000);
    // Blocks of 1024, 2048 and 4096 bytes, the last one partly used.
    h.append(std::string_view(data).substr(0, 1024));
    h.append(std::string_view(data).substr(1024, 2048));
    h.append(std::string_view(data).substr(3072));
    const std::size_t cap = h.capacity_bytes();
    ASSERT_EQ(cap, 1024u + 2048u + 4096u);
    std::vector<byte_slice> held;
    h.read(0, no_limit, held);

    h.trim_before(0);
    EXPECT_EQ(h.begin_offset(), 0u);
    h.trim_before(1023);  // inside the first block: nothing released
    EXPECT_EQ(h.begin_offset(), 0u);
    EXPECT_EQ(h.capacity_bytes(), cap);

    h.trim_before(3000);  // first block released, second still holds 3000
    EXPECT_EQ(h.begin_offset(), 1024u);
    EXPECT_EQ(h.capacity_bytes(), cap - 1024);
    EXPECT_EQ(h.end_offset(), 5000u);
    EXPECT_EQ(read_all(h, 1024, no_limit), data.substr(1024));
    EXPECT_EQ(h.byte_at(1024), data[1024]);

    h.trim_before(5000);  // the last block is not full: it stays
    EXPECT_EQ(h.begin_offset(), 3072u);
    EXPECT_EQ(h.capacity_bytes(), 4096u);
    EXPECT_EQ(read_all(h, 3072, no_limit), data.substr(3072));
    EXPECT_EQ(h.end_offset(), 5000u);

    // Slices taken before the trim still hold the released bytes.
    std::string joined;
    for (const auto& sl : held) joined.append(sl.view());
    EXPECT_EQ(joined, data);

    // Appending after a trim continues the offset space.
    h.append("tail");
    EXPECT_EQ(h.end_offset(), 5004u);
    EXPECT_EQ(read_all(h, 4998, no_limit), data.substr(4998) + "tail");
}

TEST(HotBytesTrim, TrimmingEverythingKeepsTheEndAndAcceptsAppends) {
    hot_bytes h;
    h.append(pattern(1024));  // exactly one full block
    h.trim_before(1024);
    EXPECT_EQ(h.begin_offset(), 1024u);
    EXPECT_EQ(h.end_offset(), 1024u);
    EXPECT_EQ(h.capacity_bytes(), 0u);
    EXPECT_EQ(read_all(h, 1024, 10), "");
    h.append("abc");
    EXPECT_EQ(h.end_offset(), 1027u);
    EXPECT_EQ(read_all(h, 1024, no_limit), "abc");
    EXPECT_EQ(h.byte_at(1026), 'c');
}

}  // namespace
}  // namespace dstream::storage
