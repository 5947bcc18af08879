// The S3 store's pure pieces: its location and credential parsing, the
// canonical forms SigV4 signs, the XML it reads, the backoff bounds. The
// exchanges with a server are tested in tests/s3.
#include <cstdlib>

#include <gtest/gtest.h>

#include "storage/detail/s3_backoff.h"
#include "storage/detail/s3_encoding.h"
#include "storage/detail/s3_xml.h"
#include "storage/s3_object_store.h"

namespace dstream::storage {
namespace {

using namespace std::chrono_literals;

TEST(S3Location, BucketAndPrefix) {
    auto bare = parse_s3_url("s3://my-bucket");
    ASSERT_TRUE(bare.ok());
    EXPECT_EQ(bare->bucket, "my-bucket");
    EXPECT_EQ(bare->prefix, "");
    auto nested = parse_s3_url("s3://my.bucket/cold/node-1/");
    ASSERT_TRUE(nested.ok());
    EXPECT_EQ(nested->bucket, "my.bucket");
    EXPECT_EQ(nested->prefix, "cold/node-1");
}

TEST(S3Location, RefusesWhatS3Would) {
    for (const char* url :
         {"http://bucket", "s3://", "s3://ab", "s3://Upper", "s3://-bucket", "s3://bucket-",
          "s3://a..b", "s3://a.-b", "s3://under_score", "s3://bucket//x", "s3://bucket/a//b"}) {
        EXPECT_FALSE(parse_s3_url(url).ok()) << url;
    }
}

TEST(S3Credentials, FromTheEnvironmentWithoutEchoingThem) {
    ::setenv("AWS_ACCESS_KEY_ID", "AKIDEXAMPLE", 1);
    ::setenv("AWS_SECRET_ACCESS_KEY", "very-secret", 1);
    ::setenv("AWS_SESSION_TOKEN", "token", 1);
    auto credentials = s3_credentials_from_environment();
    ASSERT_TRUE(credentials.ok());
    EXPECT_EQ(credentials->access_key_id, "AKIDEXAMPLE");
    EXPECT_EQ(credentials->secret_access_key, "very-secret");
    EXPECT_EQ(credentials->session_token, "token");
    ::unsetenv("AWS_SECRET_ACCESS_KEY");
    auto missing = s3_credentials_from_environment();
    ASSERT_FALSE(missing.ok());
    EXPECT_NE(missing.err().message.find("AWS_SECRET_ACCESS_KEY"), std::string::npos);
    EXPECT_EQ(missing.err().message.find("AKIDEXAMPLE"), std::string::npos);
    ::unsetenv("AWS_ACCESS_KEY_ID");
    ::unsetenv("AWS_SESSION_TOKEN");
}

TEST(S3Store, RefusesOptionsThatCannotWork) {
    s3_options options;
    options.location = {"bucket", ""};
    EXPECT_FALSE(make_s3_object_store(options).ok());  // no credentials
    options.credentials = {"id", "secret", ""};
    EXPECT_TRUE(make_s3_object_store(options).ok());
    options.endpoint = "127.0.0.1:9000";
    EXPECT_FALSE(make_s3_object_store(options).ok());
    options.endpoint = "http://127.0.0.1:9000/";
    options.part_bytes = 1u << 20;
    EXPECT_FALSE(make_s3_object_store(options).ok());
}

TEST(S3Encoding, KeysKeepSlashesQueriesDoNot) {
    using detail::slash;
    EXPECT_EQ(detail::s3_uri_encode("a/b c+d%e~f_g.h-i", slash::keep), "a/b%20c%2Bd%25e~f_g.h-i");
    EXPECT_EQ(detail::s3_uri_encode("a/b", slash::encode), "a%2Fb");
    EXPECT_EQ(detail::s3_uri_encode("\xc3\xa9", slash::keep), "%C3%A9");
    EXPECT_EQ(detail::s3_uri_encode("*", slash::keep), "%2A");
}

TEST(S3Encoding, CanonicalQueryIsSortedAndEncoded) {
    EXPECT_EQ(detail::s3_canonical_query(
                  {{"prefix", "a b/"}, {"list-type", "2"}, {"continuation-token", "x+y="}}),
              "continuation-token=x%2By%3D&list-type=2&prefix=a%20b%2F");
    EXPECT_EQ(detail::s3_canonical_query({}), "");
}

TEST(S3Encoding, PayloadHash) {
    EXPECT_EQ(detail::s3_sha256_hex(""),
              "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    EXPECT_EQ(detail::s3_sha256_hex("abc"),
              "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
}

TEST(S3Xml, ListPages) {
    auto page = detail::parse_s3_list_page(
        R"(<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Name>b</Name>
<Contents><Key>p/a &amp; b</Key><LastModified>2026-12-01T14:20:33.250Z</LastModified><Size>12</Size><ETag>"x"</ETag></Contents>
<Contents><Key>p/c</Key><Size>0</Size></Contents>
<IsTruncated>true</IsTruncated><NextContinuationToken>tok/+=</NextContinuationToken></ListBucketResult>)");
    ASSERT_TRUE(page.has_value());
    ASSERT_EQ(page->objects.size(), 2u);
    EXPECT_EQ(page->objects[0].key, "p/a & b");
    EXPECT_EQ(page->objects[0].size, 12u);
    EXPECT_EQ(page->objects[0].modified_ms, 1796134833250);
    EXPECT_EQ(page->objects[1].modified_ms, 0) << "no LastModified: no age";
    EXPECT_EQ(page->objects[1].key, "p/c");
    EXPECT_EQ(page->next_token, "tok/+=");

    auto last = detail::parse_s3_list_page(
        "<ListBucketResult><IsTruncated>false</IsTruncated></ListBucketResult>");
    ASSERT_TRUE(last.has_value());
    EXPECT_TRUE(last->objects.empty());
    EXPECT_TRUE(last->next_token.empty());

    EXPECT_FALSE(
        detail::parse_s3_list_page("<ListBucketResult><IsTruncated>true</IsTruncated>"
                                   "</ListBucketResult>"));  // no way on
    EXPECT_FALSE(
        detail::parse_s3_list_page("<ListBucketResult><Contents><Size>1x</Size>"
                                   "</Contents></ListBucketResult>"));
    EXPECT_FALSE(detail::parse_s3_list_page("<ListBucketResult>"));
}

TEST(S3Xml, Timestamps) {
    EXPECT_EQ(detail::parse_s3_timestamp_ms("1970-01-01T00:00:00Z"), 0);
    EXPECT_EQ(detail::parse_s3_timestamp_ms("1970-01-01T00:00:01.5Z"), 1500);
    EXPECT_EQ(detail::parse_s3_timestamp_ms("2026-12-01T14:20:33.000Z"), 1796134833000);
    EXPECT_EQ(detail::parse_s3_timestamp_ms("2024-02-29T23:59:59.123456Z"), 1709251199123);
    for (const char* bad : {"", "2026-12-01 14:20:33Z", "2026-12-01T14:20:33", "2026-13-01T00:00:00Z",
                            "2026-02-30T00:00:00Z", "2026-12-01T24:00:00Z", "2026-12-01T14:20:33.Z",
                            "2026-12-01T14:20:33.1xZ", "2026-12-01T14:2a:33Z"}) {
        EXPECT_FALSE(detail::parse_s3_timestamp_ms(bad).has_value()) << bad;
    }
}

TEST(S3Xml, ErrorCodeAndUploadId) {
    EXPECT_EQ(
        detail::parse_s3_error_code(
            "<?xml version=\"1.0\"?><Error><Code>NoSuchBucket</Code><Message>m</Message></Error>"),
        "NoSuchBucket");
    EXPECT_EQ(detail::parse_s3_error_code(""), "");
    EXPECT_EQ(detail::parse_s3_error_code("<CompleteMultipartUploadResult/>"), "");
    EXPECT_EQ(
        detail::parse_s3_upload_id("<InitiateMultipartUploadResult><Bucket>b</Bucket>"
                                   "<UploadId>abc.def</UploadId></InitiateMultipartUploadResult>"),
        "abc.def");
    EXPECT_FALSE(detail::parse_s3_upload_id("<InitiateMultipartUploadResult/>"));
}

class fixed_random final : public runtime::random_source {
public:
    explicit fixed_random(std::uint64_t value) : _value(value) {}
    std::uint64_t next() override { return _value; }

private:
    std::uint64_t _value;
};

// A draw of d waits d mod (ceiling + 1): the draw c waiting c and c + 1
// waiting nothing pins the ceiling at c.
TEST(S3Backoff, FullJitterUnderADoublingCappedCeiling) {
    const std::chrono::milliseconds ceilings[] = {100ms, 200ms, 400ms, 800ms, 1000ms, 1000ms};
    for (unsigned retry = 0; retry < std::size(ceilings); ++retry) {
        const auto c = static_cast<std::uint64_t>(ceilings[retry].count());
        fixed_random at_ceiling(c);
        fixed_random past_ceiling(c + 1);
        EXPECT_EQ(detail::s3_backoff(retry, 100ms, 1000ms, at_ceiling), ceilings[retry]) << retry;
        EXPECT_EQ(detail::s3_backoff(retry, 100ms, 1000ms, past_ceiling), 0ms) << retry;
    }
    fixed_random at_cap(5000);
    EXPECT_EQ(detail::s3_backoff(200, 100ms, 5000ms, at_cap), 5000ms);  // no overflow far out
}

}  // namespace
}  // namespace dstream::storage
