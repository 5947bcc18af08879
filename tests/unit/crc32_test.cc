// base/crc32.h: the checksum of the WAL and checkpoint formats, which were
// written with zlib's crc32: the same values, for pieces taken whole or in
// parts, so that the files written before still check.
#include "base/crc32.h"

#include <string>
#include <zlib.h>

#include <gtest/gtest.h>

namespace dstream {
namespace {

std::uint32_t zlib_crc(std::string_view bytes) {
    return static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                            reinterpret_cast<const Bytef*>(bytes.data()),
                                            static_cast<uInt>(bytes.size())));
}

TEST(Crc32, IsZlibsCrc32) {
    EXPECT_EQ(crc32_of(""), 0u);
    EXPECT_EQ(crc32_of("123456789"), 0xcbf43926u);  // the check value of CRC-32/ISO-HDLC
    std::string bytes;
    for (int n = 0; n < 5000; ++n) {
        bytes.push_back(static_cast<char>(n * 131 + 7));
        if (n < 100 || n % 97 == 0) {
            ASSERT_EQ(crc32_of(bytes), zlib_crc(bytes)) << bytes.size();
        }
    }
}

TEST(Crc32, ContinuesOverPiecesAsOverTheWhole) {
    std::string bytes(70000, '\0');
    for (std::size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<char>(i * 31 + i / 7);
    for (const std::size_t cut : {0u, 1u, 12u, 1024u, 65537u, 70000u}) {
        const std::string_view all(bytes);
        EXPECT_EQ(crc32_update(crc32_of(all.substr(0, cut)), all.substr(cut)), zlib_crc(all))
            << cut;
    }
}

}  // namespace
}  // namespace dstream
