#pragma once
// The cold tier in an S3 bucket (or any server of the S3 API): objects under
// `s3://BUCKET/PREFIX/`, over libcurl with its SigV4 signing. Whole puts,
// multipart uploads past a threshold, ranged GETs, ListObjectsV2 with
// continuation, deletes; retries with capped exponential backoff and jitter
// on 5xx, throttling, timeouts and resets (every key is deterministic, so a
// repeated put is harmless).
//
// Every failure is COLD_STORE_FAILED (502), its message naming the S3 call
// and S3's answer ("PutObject: 403 AccessDenied"), never a key or a
// credential; the log line beside it names the key.
//
// Calls block, as object_store says: the server runs them on its I/O pool.
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "runtime/random.h"
#include "storage/object_store.h"

namespace dstream::storage {

// Where the objects go: `s3://BUCKET` or `s3://BUCKET/PREFIX` (no trailing
// slash kept; keys are PREFIX/KEY, or KEY without a prefix).
struct s3_location {
    std::string bucket;
    std::string prefix;
};
// Refuses anything but s3://BUCKET[/PREFIX] with a bucket name S3 accepts.
result<s3_location> parse_s3_url(std::string_view url);

// From AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (the
// last optional); never from a config file, never logged.
struct s3_credentials {
    std::string access_key_id;
    std::string secret_access_key;
    std::string session_token;
};
// Fails when either of the first two is unset or empty; the message names
// the variable, never a value.
result<s3_credentials> s3_credentials_from_environment();

struct s3_options {
    s3_location location;
    // Empty: AWS itself, https://BUCKET.s3.REGION.amazonaws.com (virtual-hosted
    // style). Otherwise the endpoint's own URL (http://127.0.0.1:9000), always
    // addressed path-style (ENDPOINT/BUCKET/KEY).
    std::string endpoint;
    std::string region = "us-east-1";
    s3_credentials credentials;
    std::chrono::milliseconds connect_timeout{5000};
    // One request's whole time, a ranged GET of a chunk or a part's PUT.
    std::chrono::milliseconds request_timeout{30000};
    // Attempts of one call (the first included) before it fails; the waits
    // between them double from backoff_base up to backoff_cap, with jitter.
    unsigned max_attempts = 6;
    std::chrono::milliseconds backoff_base{100};
    std::chrono::milliseconds backoff_cap{5000};
    // A writer's object of this size or more goes up in parts of part_bytes
    // (S3 wants 5 MiB at least for every part but the last).
    std::uint64_t multipart_threshold = 16u << 20;
    std::uint64_t part_bytes = 8u << 20;
};

// Waits out the backoff before another attempt. The server's blocks the
// calling thread (one of the I/O pool's); tests record the wait instead.
using s3_backoff_wait = std::function<void(std::chrono::milliseconds)>;
void sleep_this_thread(std::chrono::milliseconds wait);

// Makes the store; fails when the options cannot work (no credentials, a bad
// endpoint URL, parts S3 refuses). Jitter and waiting are inputs: tests give
// their own. No clock: libcurl 7.88 dates each signature itself.
result<std::unique_ptr<object_store>> make_s3_object_store(
    s3_options options, runtime::random_source& random = runtime::system_random(),
    s3_backoff_wait wait = sleep_this_thread);

}  // namespace dstream::storage
