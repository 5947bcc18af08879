// Our SigV4 signatures as AWS's own code computes them: run under
// sigv4_check_server.py, which answers 403 to a request botocore signs
// differently (with the path and query in S3's canonical forms).
#include <algorithm>

#include <gtest/gtest.h>

#include "s3_test_env.h"

namespace dstream::testing {
namespace {

class S3Signature : public ::testing::Test {
protected:
    void SetUp() override {
        ASSERT_EQ(environment("DSTREAM_TEST_S3_SIGNATURES_CHECKED"), "1")
            << "run under tests/s3/sigv4_check_server.py";
        _store = make_store(harness_options("cold/node 1"), _waits);
        ASSERT_NE(_store, nullptr);
    }

    recorded_waits _waits;
    std::unique_ptr<storage::object_store> _store;
};

TEST_F(S3Signature, APutWithABodyAndARangedGet) {
    const std::string key = "chunks/a b+c%d=\xc3\xa9~*!.bin";
    const std::string bytes = pattern_bytes(5000, 6);
    ASSERT_TRUE(_store->put(key, bytes).ok());
    std::string out;
    ASSERT_TRUE(_store->get(key, 100, 900, out).ok());
    EXPECT_TRUE(out == bytes.substr(100, 900));
    EXPECT_EQ(*_store->size(key), std::optional<std::uint64_t>(bytes.size()));
    ASSERT_TRUE(_store->remove(key).ok());
    EXPECT_FALSE(_store->size(key)->has_value());
}

TEST_F(S3Signature, AListingThroughContinuationTokens) {
    // The server lists two keys a page, with tokens that need encoding.
    std::vector<std::string> keys;
    for (const char* name : {"a", "b c", "d+e", "f/g", "h%i"})
        keys.push_back(std::string("list me/") + name);
    for (const auto& key : keys) ASSERT_TRUE(_store->put(key, key).ok()) << key;
    auto listed = _store->list("list me/");
    ASSERT_TRUE(listed.ok()) << listed.err().message;
    std::vector<std::string> names;
    for (const auto& entry : *listed) names.push_back(entry.key);
    std::sort(names.begin(), names.end());
    EXPECT_EQ(names, keys);
}

TEST_F(S3Signature, AMultipartUpload) {
    auto options = harness_options("cold");
    options.multipart_threshold = 5u << 20;
    options.part_bytes = 5u << 20;
    auto store = make_store(options, _waits);
    const std::string bytes = pattern_bytes((11u << 20) + 3, 7);
    auto writer = store->open_writer("snapshots/multi part");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->write(bytes).ok());
    ASSERT_TRUE((*writer)->finish().ok());
    std::string out;
    ASSERT_TRUE(store->get("snapshots/multi part", 0, bytes.size(), out).ok());
    EXPECT_TRUE(out == bytes);

    auto abandoned = store->open_writer("snapshots/abandoned");
    ASSERT_TRUE((*abandoned)->write(bytes).ok());
    abandoned->reset();  // an AbortMultipartUpload, signed too
    EXPECT_FALSE(store->size("snapshots/abandoned")->has_value());
}

TEST_F(S3Signature, AWrongSecretIsRefused) {
    // Proves the check checks: the same calls, signed with another secret.
    auto options = harness_options("cold");
    options.credentials.secret_access_key += "x";
    auto store = make_store(options, _waits);
    const status refused = store->put("k", "v");
    ASSERT_FALSE(refused.ok());
    EXPECT_NE(refused.err().message.find("403 SignatureDoesNotMatch"), std::string::npos);
    EXPECT_EQ(refused.err().message.find(options.credentials.secret_access_key), std::string::npos);
}

}  // namespace
}  // namespace dstream::testing
