#pragma once
// What the tests of the S3 store share: the server a harness started
// (with_s3rver.sh or sigv4_check_server.py export it), a prefix per test so
// that tests never see each other's objects, and a wait that only records.
#include <chrono>
#include <cstdlib>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "storage/s3_object_store.h"

namespace dstream::testing {

inline std::string environment(const char* name) {
    const char* value = std::getenv(name);
    return value == nullptr ? "" : value;
}

// Options for the harness's server and bucket under `prefix`, with the
// credentials it exported; fails the test when no harness runs it.
inline storage::s3_options harness_options(const std::string& prefix) {
    storage::s3_options options;
    options.endpoint = environment("DSTREAM_TEST_S3_ENDPOINT");
    options.location = {environment("DSTREAM_TEST_S3_BUCKET"), prefix};
    EXPECT_FALSE(options.endpoint.empty()) << "run under tests/s3/with_s3rver.sh";
    auto credentials = storage::s3_credentials_from_environment();
    EXPECT_TRUE(credentials.ok());
    if (credentials) options.credentials = *credentials;
    options.backoff_base = std::chrono::milliseconds(10);
    options.backoff_cap = std::chrono::milliseconds(50);
    return options;
}

// A prefix no other test (or earlier run against a kept server) uses.
inline std::string test_prefix() {
    const auto* info = ::testing::UnitTest::GetInstance()->current_test_info();
    return std::string("tests/") + info->test_suite_name() + "." + info->name() + "-" +
           std::to_string(std::chrono::steady_clock::now().time_since_epoch().count());
}

// Records the backoff waits instead of sleeping them.
class recorded_waits {
public:
    storage::s3_backoff_wait wait() {
        return [this](std::chrono::milliseconds ms) {
            std::lock_guard lock(_mutex);
            _waits.push_back(ms);
        };
    }
    std::vector<std::chrono::milliseconds> waits() const {
        std::lock_guard lock(_mutex);
        return _waits;
    }

private:
    mutable std::mutex _mutex;
    std::vector<std::chrono::milliseconds> _waits;
};

inline std::unique_ptr<storage::object_store> make_store(storage::s3_options options,
                                                         recorded_waits& waits) {
    auto store =
        storage::make_s3_object_store(std::move(options), runtime::system_random(), waits.wait());
    EXPECT_TRUE(store.ok()) << (store ? "" : store.err().message);
    return store ? std::move(*store) : nullptr;
}

// Keeps what a streamed read hands it, and how many pieces; refuses the
// piece numbered `refuse_from` (1 is the first) and those after, as a reader
// that left.
class collecting_sink final : public storage::range_sink {
public:
    bool write(std::string_view piece) override {
        if (++pieces >= refuse_from) return false;
        bytes.append(piece);
        return true;
    }
    std::string bytes;
    std::size_t pieces = 0;
    std::size_t refuse_from = static_cast<std::size_t>(-1);
};

// Bytes no two offsets of which are likely to agree by chance.
inline std::string pattern_bytes(std::size_t size, std::uint64_t seed) {
    std::string bytes(size, '\0');
    std::uint64_t x = seed * 0x9E3779B97F4A7C15ull + 1;
    for (auto& b : bytes) {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        b = static_cast<char>(x);
    }
    return bytes;
}

}  // namespace dstream::testing
