// The S3 store's retries against a scripted server (fake_s3_server.h):
// which failures are attempted again, how long it waits between attempts,
// that a call fails cleanly once they run out, and that the store works
// again when the server does.
#include <algorithm>

#include <gtest/gtest.h>

#include "fake_s3_server.h"
#include "s3_test_env.h"
#include "storage/storage_metrics.h"

namespace dstream::testing {
namespace {

using namespace std::chrono_literals;

class S3Faults : public ::testing::Test {
protected:
    storage::s3_options options_for(const fake_s3_server& server) {
        storage::s3_options options;
        options.endpoint = server.endpoint();
        options.location = {"bucket", "prefix"};
        options.credentials = {"AKIDFAULTS", "secret-never-shown", ""};
        options.max_attempts = 5;
        options.backoff_base = 100ms;
        options.backoff_cap = 250ms;
        options.connect_timeout = 1000ms;
        options.request_timeout = 2000ms;
        return options;
    }

    void expect_clean_failure(const status& s, std::string_view operation, std::string_view what) {
        ASSERT_FALSE(s.ok());
        EXPECT_EQ(s.err().code, protocol::error_code::cold_store_failed);
        EXPECT_NE(s.err().message.find(operation), std::string::npos) << s.err().message;
        EXPECT_NE(s.err().message.find(what), std::string::npos) << s.err().message;
        for (const char* secret : {"AKIDFAULTS", "secret-never-shown"})
            EXPECT_EQ(s.err().message.find(secret), std::string::npos) << s.err().message;
    }

    std::unique_ptr<fake_s3_server> _server = std::make_unique<fake_s3_server>();
    recorded_waits _waits;
};

std::uint64_t retries_of(storage::object_op op) {
    return storage::storage_metrics::get().of(op).retries.value();
}

TEST_F(S3Faults, ThrottlingServerErrorsAndResetsAreRetriedWithinTheBackoffBounds) {
    _server->script(
        {fake_answer::s3_error(503, "SlowDown"), fake_answer::s3_error(500, "InternalError"),
         fake_answer::s3_error(429, "TooManyRequests"), fake_answer::reset(), fake_answer{}});
    auto store = make_store(options_for(*_server), _waits);
    const std::uint64_t retries_before = retries_of(storage::object_op::put);
    ASSERT_TRUE(store->put("k", "v").ok());
    EXPECT_EQ(_server->requests().size(), 5u);
    EXPECT_EQ(retries_of(storage::object_op::put), retries_before + 4);
    const auto waits = _waits.waits();
    ASSERT_EQ(waits.size(), 4u);
    const std::chrono::milliseconds ceilings[] = {100ms, 200ms, 250ms, 250ms};
    for (std::size_t i = 0; i < waits.size(); ++i) {
        EXPECT_GE(waits[i], 0ms);
        EXPECT_LE(waits[i], ceilings[i]) << i;
    }
}

TEST_F(S3Faults, RunningOutOfAttemptsFailsNamingTheCallAndTheAnswer) {
    _server->script(std::vector<fake_answer>(10, fake_answer::s3_error(503, "SlowDown")));
    auto options = options_for(*_server);
    options.max_attempts = 3;
    auto store = make_store(options, _waits);
    expect_clean_failure(store->put("k", "v"), "PutObject", "503 SlowDown");
    EXPECT_EQ(_server->requests().size(), 3u);
    EXPECT_EQ(_waits.waits().size(), 2u);
    // The next call starts afresh, and succeeds once the server does.
    _server->script({fake_answer::s3_error(503, "SlowDown"), fake_answer{}});
    EXPECT_TRUE(store->put("k", "v").ok());
}

TEST_F(S3Faults, OtherClientErrorsFailAtOnce) {
    _server->script({fake_answer::s3_error(403, "AccessDenied")});
    auto store = make_store(options_for(*_server), _waits);
    std::string out;
    expect_clean_failure(store->get("k", 0, 4, out), "GetObject", "403 AccessDenied");
    EXPECT_EQ(_server->requests().size(), 1u);
    EXPECT_TRUE(_waits.waits().empty());
}

TEST_F(S3Faults, ATimedOutRequestIsRetried) {
    const fake_answer ranged{
        fake_answer::kind::respond, 206, "abcd", {"Content-Range: bytes 10-13/100"}};
    _server->script({fake_answer::stall(), ranged});
    auto options = options_for(*_server);
    options.request_timeout = 300ms;
    auto store = make_store(options, _waits);
    std::string out;
    ASSERT_TRUE(store->get("k", 10, 4, out).ok());
    EXPECT_EQ(out, "abcd");
    EXPECT_EQ(_server->requests().size(), 2u);
    EXPECT_EQ(_waits.waits().size(), 1u);
}

TEST_F(S3Faults, AShortOrUnrangedAnswerIsNoRead) {
    _server->script({{fake_answer::kind::respond, 206, "abc", {"Content-Range: bytes 10-12/13"}},
                     {fake_answer::kind::respond, 200, "abcd", {}},
                     {fake_answer::kind::respond, 206, "abcd", {"Content-Range: bytes 0-3/100"}}});
    auto store = make_store(options_for(*_server), _waits);
    std::string out = "untouched";
    expect_clean_failure(store->get("k", 10, 4, out), "GetObject", "length");
    expect_clean_failure(store->get("k", 10, 4, out), "GetObject", "200");
    expect_clean_failure(store->get("k", 10, 4, out), "GetObject", "range");
    EXPECT_EQ(out, "untouched");
    EXPECT_EQ(_server->requests().size(), 3u);
}

TEST_F(S3Faults, AServerThatIsDownFailsTheCallAndServesTheNextOnceBack) {
    const std::uint16_t port = _server->port();
    auto store = make_store(options_for(*_server), _waits);
    _server.reset();  // connections to the port are refused now
    expect_clean_failure(store->put("k", "v"), "PutObject", "connect");
    EXPECT_EQ(_waits.waits().size(), 4u);  // refused connections are retried too
    _server = std::make_unique<fake_s3_server>(port);
    EXPECT_TRUE(store->put("k", "v").ok());
}

TEST_F(S3Faults, AStreamedRangeIsExactlyTheBytesAsked) {
    const std::string object = pattern_bytes(100'000, 6);
    _server->script({fake_answer::ranged(object)});
    auto store = make_store(options_for(*_server), _waits);
    ASSERT_TRUE(store->streams_ranges());
    collecting_sink sink;
    ASSERT_TRUE(store->stream_range("k", 1000, 50'000, sink).ok());
    EXPECT_TRUE(sink.bytes == object.substr(1000, 50'000));
    EXPECT_EQ(_server->ranges(), std::vector<std::string>{"bytes=1000-50999"});
}

TEST_F(S3Faults, AResetMidBodyResumesFromTheByteReached) {
    const std::string object = pattern_bytes(200'000, 7);
    _server->script({fake_answer::ranged(object, 30'000), fake_answer::ranged(object)});
    auto store = make_store(options_for(*_server), _waits);
    const std::uint64_t retries_before = retries_of(storage::object_op::stream_range);
    collecting_sink sink;
    ASSERT_TRUE(store->stream_range("k", 1000, 150'000, sink).ok());
    EXPECT_TRUE(sink.bytes == object.substr(1000, 150'000));
    const auto ranges = _server->ranges();
    ASSERT_EQ(ranges.size(), 2u);
    EXPECT_EQ(ranges[0], "bytes=1000-150999");
    // The second asks from where the first stopped, not from the start again.
    const std::size_t resumed_at = std::stoul(ranges[1].substr(6));
    EXPECT_GT(resumed_at, 1000u);
    EXPECT_LE(resumed_at, 31'000u);
    EXPECT_EQ(ranges[1], "bytes=" + std::to_string(resumed_at) + "-150999");
    EXPECT_EQ(_waits.waits().size(), 1u);
    EXPECT_EQ(retries_of(storage::object_op::stream_range), retries_before + 1);
}

TEST_F(S3Faults, AStreamedReadThatFailsBeforeItsFirstByteIsAnErrorValue) {
    auto store = make_store(options_for(*_server), _waits);
    collecting_sink sink;
    _server->script({fake_answer::s3_error(403, "AccessDenied")});
    expect_clean_failure(store->stream_range("k", 0, 10, sink), "GetObject", "403 AccessDenied");
    _server->script(std::vector<fake_answer>(5, fake_answer::s3_error(503, "SlowDown")));
    expect_clean_failure(store->stream_range("k", 0, 10, sink), "GetObject", "503 SlowDown");
    // An answer of another range is refused before any of its bytes.
    _server->script({{fake_answer::kind::respond, 206, "abcd", {"Content-Range: bytes 0-3/100"}}});
    expect_clean_failure(store->stream_range("k", 10, 4, sink), "GetObject", "range");
    EXPECT_EQ(sink.pieces, 0u);
    EXPECT_EQ(_server->requests().size(), 7u);
}

TEST_F(S3Faults, FaultsWithoutProgressRunOutOfAttemptsAfterPartOfTheRange) {
    const std::string object = pattern_bytes(100'000, 8);
    _server->script({fake_answer::ranged(object, 20'000), fake_answer::reset(),
                     fake_answer::reset(), fake_answer::reset(), fake_answer::reset()});
    auto store = make_store(options_for(*_server), _waits);
    collecting_sink sink;
    expect_clean_failure(store->stream_range("k", 0, 100'000, sink), "GetObject", "");
    // What was handed on is the object's prefix, never other bytes.
    EXPECT_GT(sink.bytes.size(), 0u);
    EXPECT_LE(sink.bytes.size(), 20'000u);
    EXPECT_TRUE(sink.bytes == object.substr(0, sink.bytes.size()));
    // The attempt that brought bytes starts the count again: 1 + 4 resets.
    EXPECT_EQ(_server->requests().size(), 5u);
}

TEST_F(S3Faults, AReaderThatLeavesEndsTheTransfer) {
    const std::string object = pattern_bytes(1u << 20, 9);
    _server->script({fake_answer::ranged(object)});
    auto store = make_store(options_for(*_server), _waits);
    collecting_sink sink;
    sink.refuse_from = 2;
    ASSERT_TRUE(store->stream_range("k", 0, object.size(), sink).ok());
    EXPECT_EQ(sink.pieces, 2u);
    EXPECT_TRUE(sink.bytes == object.substr(0, sink.bytes.size()));
    EXPECT_EQ(_server->requests().size(), 1u);
    EXPECT_TRUE(_waits.waits().empty());
}

const fake_answer upload_created{
    fake_answer::kind::respond,
    200,
    "<InitiateMultipartUploadResult><UploadId>up-1</UploadId></InitiateMultipartUploadResult>",
    {}};
const fake_answer part_stored{fake_answer::kind::respond, 200, "", {"ETag: \"e\""}};

storage::s3_options small_parts(storage::s3_options options) {
    options.multipart_threshold = 5u << 20;
    options.part_bytes = 5u << 20;
    return options;
}

TEST_F(S3Faults, ACompletionThatFailsInItsOkBodyIsRetried) {
    _server->script(
        {upload_created, part_stored, part_stored,
         fake_answer{
             fake_answer::kind::respond, 200, "<Error><Code>InternalError</Code></Error>", {}},
         fake_answer{fake_answer::kind::respond, 200, "<CompleteMultipartUploadResult/>", {}}});
    auto store = make_store(small_parts(options_for(*_server)), _waits);
    auto writer = store->open_writer("big");
    ASSERT_TRUE(writer.ok());
    ASSERT_TRUE((*writer)->write(pattern_bytes(6u << 20, 4)).ok());
    ASSERT_TRUE((*writer)->finish().ok());
    writer->reset();
    const std::vector<std::string> expected = {
        "POST /bucket/prefix/big?uploads=", "PUT /bucket/prefix/big?partNumber=1&uploadId=up-1",
        "PUT /bucket/prefix/big?partNumber=2&uploadId=up-1",
        "POST /bucket/prefix/big?uploadId=up-1", "POST /bucket/prefix/big?uploadId=up-1"};
    EXPECT_EQ(_server->requests(), expected);
}

TEST_F(S3Faults, AWriterWhosePartFailedAbortsItsUpload) {
    _server->script({upload_created, fake_answer::s3_error(400, "InvalidArgument"),
                     fake_answer{fake_answer::kind::respond, 204, "", {}}});
    auto store = make_store(small_parts(options_for(*_server)), _waits);
    auto writer = store->open_writer("big");
    ASSERT_TRUE(writer.ok());
    expect_clean_failure((*writer)->write(pattern_bytes(5u << 20, 5)), "UploadPart",
                         "InvalidArgument");
    EXPECT_FALSE((*writer)->finish().ok());
    writer->reset();
    const std::vector<std::string> expected = {
        "POST /bucket/prefix/big?uploads=", "PUT /bucket/prefix/big?partNumber=1&uploadId=up-1",
        "DELETE /bucket/prefix/big?uploadId=up-1"};
    EXPECT_EQ(_server->requests(), expected);
}

}  // namespace
}  // namespace dstream::testing
