// BLAKE3 digests fed in pieces equal the one-shot digest (extensions 2.2:
// a snapshot assembled from parts is hashed while it is copied).
#include "protocol/digest.h"

#include <gtest/gtest.h>

#include <random>
#include <string>

#include "base/binary.h"

namespace dstream::protocol {
namespace {

std::string random_bytes(std::size_t n, unsigned seed) {
    std::mt19937 gen(seed);
    std::string out(n, '\0');
    for (auto& c : out) c = static_cast<char>(gen());
    return out;
}

TEST(Digest, KnownAnswer) {
    // The BLAKE3 reference test vector of the empty input.
    EXPECT_EQ(to_hex(blake3_256("")), "af1349b9f5f9a1a6a0404dea36dcc9499bcb25c9adc112b7cc9a93cae41f3262");
    EXPECT_EQ(to_hex(hasher().finish()), to_hex(blake3_256("")));
}

TEST(Digest, PiecesOfAnySizeGiveTheOneShotDigest) {
    // Past several 1 KiB chunks and a 16 KiB subtree, with pieces that cross
    // chunk boundaries at odd places.
    const std::string bytes = random_bytes(70'001, 7);
    const body_digest whole = blake3_256(bytes);
    for (std::size_t piece : {1u, 63u, 1024u, 1025u, 4096u, 65'536u, 70'001u}) {
        SCOPED_TRACE(piece);
        hasher h;
        for (std::size_t at = 0; at < bytes.size(); at += piece) {
            h.update(std::string_view(bytes).substr(at, piece));
        }
        EXPECT_EQ(h.finish(), whole);
    }
}

TEST(Digest, FinishDoesNotEndTheHasher) {
    hasher h;
    h.update("abc");
    const body_digest early = h.finish();
    EXPECT_EQ(early, blake3_256("abc"));
    h.update("def");
    EXPECT_EQ(h.finish(), blake3_256("abcdef"));
}

TEST(SnapshotDigest, CoversTheContentTypeLengthTheContentTypeAndTheBody) {
    const std::string content_type = "application/x-state";
    const std::string body = random_bytes(5000, 3);
    binary_writer covered;
    covered.put_u64(content_type.size());
    std::string input = std::move(covered).take() + content_type + body;
    EXPECT_EQ(snapshot_digest(content_type, body), blake3_256(input));

    hasher h = snapshot_hasher(content_type);
    h.update(std::string_view(body).substr(0, 1234));
    h.update(std::string_view(body).substr(1234));
    EXPECT_EQ(h.finish(), snapshot_digest(content_type, body));
    // The content type is part of what is covered.
    EXPECT_NE(snapshot_digest("application/octet-stream", body), snapshot_digest(content_type, body));
}

}  // namespace
}  // namespace dstream::protocol
