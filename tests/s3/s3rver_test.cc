// The S3 store against s3rver (run by with_s3rver.sh): every call of
// object_store, multipart uploads, keys that need encoding, a missing bucket.
#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>

#include <gtest/gtest.h>

#include "s3_test_env.h"

namespace dstream::testing {
namespace {

using storage::object_entry;

class S3rver : public ::testing::Test {
protected:
    void SetUp() override {
        _prefix = test_prefix();
        _store = make_store(harness_options(_prefix), _waits);
        ASSERT_NE(_store, nullptr);
    }

    // The multipart uploads s3rver holds open: a directory each, under the
    // bucket's uploads resource (s3rver's file layout; the harness exports
    // its data directory for this). s3rver never aborts one.
    static std::size_t unfinished_uploads() {
        const std::filesystem::path uploads =
            std::filesystem::path(environment("DSTREAM_TEST_S3_DIRECTORY")) /
            environment("DSTREAM_TEST_S3_BUCKET") / "._S3rver_uploads";
        std::error_code ec;
        if (!std::filesystem::exists(uploads, ec)) return 0;
        return static_cast<std::size_t>(std::distance(std::filesystem::directory_iterator(uploads),
                                                      std::filesystem::directory_iterator()));
    }

    std::string _prefix;
    recorded_waits _waits;
    std::unique_ptr<storage::object_store> _store;
};

TEST_F(S3rver, PutGetRangedGetSizeRemove) {
    const std::string bytes = pattern_bytes(10'000, 1);
    ASSERT_TRUE(_store->put("chunks/a", bytes).ok());
    std::string out;
    ASSERT_TRUE(_store->get("chunks/a", 0, bytes.size(), out).ok());
    EXPECT_EQ(out, bytes);
    ASSERT_TRUE(_store->get("chunks/a", 1234, 4321, out).ok());
    EXPECT_EQ(out, bytes.substr(1234, 4321));
    ASSERT_TRUE(_store->get("chunks/a", 9999, 1, out).ok());
    EXPECT_EQ(out, bytes.substr(9999));
    // The first byte alone (s3rver answers it with the whole object).
    ASSERT_TRUE(_store->get("chunks/a", 0, 1, out).ok());
    EXPECT_EQ(out, bytes.substr(0, 1));
    // A range past the end is an error, never a shorter body.
    EXPECT_FALSE(_store->get("chunks/a", 9000, 2000, out).ok());
    EXPECT_FALSE(_store->get("chunks/missing", 0, 10, out).ok());

    auto size = _store->size("chunks/a");
    ASSERT_TRUE(size.ok());
    EXPECT_EQ(*size, std::optional<std::uint64_t>(bytes.size()));
    auto none = _store->size("chunks/missing");
    ASSERT_TRUE(none.ok());
    EXPECT_FALSE(none->has_value());

    ASSERT_TRUE(_store->put("chunks/a", "replaced").ok());
    ASSERT_TRUE(_store->get("chunks/a", 0, 8, out).ok());
    EXPECT_EQ(out, "replaced");
    ASSERT_TRUE(_store->put("chunks/empty", "").ok());
    EXPECT_EQ(*_store->size("chunks/empty"), std::optional<std::uint64_t>(0));

    ASSERT_TRUE(_store->remove("chunks/a").ok());
    EXPECT_FALSE(_store->size("chunks/a")->has_value());
    EXPECT_TRUE(_store->remove("chunks/a").ok());  // absent: still a success
    EXPECT_TRUE(_waits.waits().empty());
}

TEST_F(S3rver, AStreamedRangeArrivesInPiecesAndIsExactlyTheBytes) {
    const std::string bytes = pattern_bytes(4u << 20, 10);  // one chunk
    ASSERT_TRUE(_store->put("chunks/streamed", bytes).ok());
    ASSERT_TRUE(_store->streams_ranges());
    collecting_sink sink;
    ASSERT_TRUE(_store->stream_range("chunks/streamed", 12345, 3u << 20, sink).ok());
    EXPECT_TRUE(sink.bytes == bytes.substr(12345, 3u << 20));
    // Handed on as curl delivers it, never held whole.
    EXPECT_GT(sink.pieces, 10u);
    collecting_sink last;
    ASSERT_TRUE(_store->stream_range("chunks/streamed", bytes.size() - 1, 1, last).ok());
    EXPECT_EQ(last.bytes, bytes.substr(bytes.size() - 1));
    // The first byte alone: s3rver sends the whole object, cut to the byte.
    collecting_sink first;
    ASSERT_TRUE(_store->stream_range("chunks/streamed", 0, 1, first).ok());
    EXPECT_EQ(first.bytes, bytes.substr(0, 1));

    // A missing object, or a range past the end, is an error before any byte.
    collecting_sink none;
    EXPECT_FALSE(_store->stream_range("chunks/missing", 0, 10, none).ok());
    EXPECT_FALSE(_store->stream_range("chunks/streamed", bytes.size() - 10, 20, none).ok());
    EXPECT_EQ(none.pieces, 0u);
    EXPECT_TRUE(_waits.waits().empty());
}

TEST_F(S3rver, ListsPastOneThousandKeysWithoutThePrefix) {
    constexpr int count = 1005;  // S3 pages at 1000
    for (int i = 0; i < count; ++i)
        ASSERT_TRUE(_store->put("many/" + std::to_string(100000 + i), std::to_string(i)).ok()) << i;
    ASSERT_TRUE(_store->put("other/x", "x").ok());
    // A store one level up sees the same objects under longer keys.
    auto parent = make_store(harness_options(_prefix.substr(0, _prefix.rfind('/'))), _waits);

    auto listed = _store->list("many/");
    ASSERT_TRUE(listed.ok()) << listed.err().message;
    ASSERT_EQ(listed->size(), static_cast<std::size_t>(count));
    std::sort(listed->begin(), listed->end(),
              [](const object_entry& a, const object_entry& b) { return a.key < b.key; });
    // LastModified, which the orphan sweep judges ages by, within a minute of now.
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    for (int i = 0; i < count; ++i) {
        EXPECT_EQ((*listed)[i].key, "many/" + std::to_string(100000 + i));
        EXPECT_EQ((*listed)[i].size, std::to_string(i).size());
        EXPECT_LT(std::abs(now_ms - (*listed)[i].modified_ms), 60'000) << (*listed)[i].modified_ms;
    }
    auto everything = _store->list("");
    ASSERT_TRUE(everything.ok());
    EXPECT_EQ(everything->size(), static_cast<std::size_t>(count + 1));
    auto from_parent = parent->list(_prefix.substr(_prefix.rfind('/') + 1) + "/other/");
    ASSERT_TRUE(from_parent.ok());
    ASSERT_EQ(from_parent->size(), 1u);
    EXPECT_EQ((*from_parent)[0].key, _prefix.substr(_prefix.rfind('/') + 1) + "/other/x");
    EXPECT_TRUE(_store->list("nothing/")->empty());
}

TEST_F(S3rver, MultipartUploadReadsBackByteIdentical) {
    const std::string bytes = pattern_bytes(40u << 20, 2);  // 5 parts of 8 MiB
    const std::size_t before = unfinished_uploads();        // an abandoned test's stay (below)
    auto writer = _store->open_writer("snapshots/big");
    ASSERT_TRUE(writer.ok());
    constexpr std::size_t piece = (3u << 20) + 7;  // not a divisor of a part
    for (std::size_t at = 0; at < bytes.size(); at += piece) {
        ASSERT_TRUE((*writer)->write(std::string_view(bytes).substr(at, piece)).ok());
        // Past the threshold the object goes up in parts, not whole at the end.
        if (at + piece >= (16u << 20)) {
            EXPECT_EQ(unfinished_uploads(), before + 1) << at;
        }
    }
    EXPECT_FALSE(_store->size("snapshots/big")->has_value());  // whole or absent
    ASSERT_TRUE((*writer)->finish().ok());
    writer->reset();
    EXPECT_EQ(unfinished_uploads(), before);

    EXPECT_EQ(*_store->size("snapshots/big"), std::optional<std::uint64_t>(bytes.size()));
    std::string out;
    ASSERT_TRUE(_store->get("snapshots/big", 0, bytes.size(), out).ok());
    EXPECT_TRUE(out == bytes);
    const std::uint64_t boundary = 8u << 20;
    ASSERT_TRUE(_store->get("snapshots/big", boundary - 100, 200, out).ok());
    EXPECT_TRUE(out == bytes.substr(boundary - 100, 200));
}

TEST_F(S3rver, ASmallWriterPutsWhole) {
    const std::size_t before = unfinished_uploads();
    auto writer = _store->open_writer("snapshots/small");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->write("hello, ").ok());
    ASSERT_TRUE((*writer)->write("world").ok());
    EXPECT_EQ(unfinished_uploads(), before);
    ASSERT_TRUE((*writer)->finish().ok());
    std::string out;
    ASSERT_TRUE(_store->get("snapshots/small", 0, 12, out).ok());
    EXPECT_EQ(out, "hello, world");
}

TEST_F(S3rver, AnAbandonedWriterLeavesNoObject) {
    const std::size_t before = unfinished_uploads();
    {
        auto writer = _store->open_writer("snapshots/abandoned");
        ASSERT_TRUE(writer.ok());
        ASSERT_TRUE((*writer)->write(pattern_bytes(20u << 20, 3)).ok());
        EXPECT_EQ(unfinished_uploads(), before + 1);
        auto small = _store->open_writer("snapshots/abandoned-small");
        ASSERT_TRUE((*small)->write("never finished").ok());
    }
    // s3rver answers an AbortMultipartUpload 405, so its upload stays; that
    // the writer sends one is a test of s3_faults_test and s3_signature_test.
    EXPECT_FALSE(_store->size("snapshots/abandoned")->has_value());
    EXPECT_FALSE(_store->size("snapshots/abandoned-small")->has_value());
    EXPECT_TRUE(_store->list("")->empty());
}

TEST_F(S3rver, KeysThatNeedEncoding) {
    const std::vector<std::string> keys = {"odd/with space",
                                           "odd/plus+sign",
                                           "odd/per%cent",
                                           "odd/\xc3\xbcnic\xc3\xb8"
                                           "de-\xe2\x82\xac",
                                           "odd/a=b&c;d",
                                           "odd/q?x#y",
                                           "odd/tilde~star*quote'bang!",
                                           "odd/(paren),colon:at@"};
    for (const auto& key : keys) ASSERT_TRUE(_store->put(key, key).ok()) << key;
    for (const auto& key : keys) {
        std::string out;
        ASSERT_TRUE(_store->get(key, 0, key.size(), out).ok()) << key;
        EXPECT_EQ(out, key);
        EXPECT_EQ(*_store->size(key), std::optional<std::uint64_t>(key.size())) << key;
    }
    auto listed = _store->list("odd/");
    ASSERT_TRUE(listed.ok());
    std::vector<std::string> names;
    for (const auto& entry : *listed) names.push_back(entry.key);
    std::sort(names.begin(), names.end());
    std::vector<std::string> expected = keys;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(names, expected);
    for (const auto& key : keys) ASSERT_TRUE(_store->remove(key).ok()) << key;
    EXPECT_TRUE(_store->list("odd/")->empty());
}

TEST_F(S3rver, AMissingBucketFailsEveryCallButAHead) {
    auto options = harness_options("p");
    options.location.bucket = "no-such-bucket-here";
    auto store = make_store(options, _waits);
    const auto fails_naming = [&](const status& s, std::string_view operation) {
        ASSERT_FALSE(s.ok()) << operation;
        EXPECT_EQ(s.err().code, protocol::error_code::cold_store_failed);
        EXPECT_NE(s.err().message.find(operation), std::string::npos) << s.err().message;
        EXPECT_NE(s.err().message.find("NoSuchBucket"), std::string::npos) << s.err().message;
        EXPECT_EQ(s.err().message.find("S3RVER"), std::string::npos) << "a credential in an error";
    };
    fails_naming(store->put("k", "v"), "PutObject");
    std::string out;
    fails_naming(store->get("k", 0, 1, out), "GetObject");
    fails_naming(store->remove("k"), "DeleteObject");
    auto listed = store->list("");
    ASSERT_FALSE(listed.ok());
    EXPECT_NE(listed.err().message.find("NoSuchBucket"), std::string::npos);
    auto writer = store->open_writer("k");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->write("v").ok());
    fails_naming((*writer)->finish(), "PutObject");
    // A HEAD's 404 has no body to say the bucket is missing.
    EXPECT_FALSE(store->size("k")->has_value());
    EXPECT_TRUE(_waits.waits().empty()) << "a 404 is not retried";
}

}  // namespace
}  // namespace dstream::testing
