// extensions 11 and 11.1: the one table of error codes, their statuses, and
// which of them prove that a write applied nothing.
#include "protocol/error_code.h"

#include <gtest/gtest.h>

#include <set>
#include <string>

namespace dstream::protocol {
namespace {

TEST(ErrorCodes, WireCodesAreUniqueUppercaseAndUnderscore) {
    std::set<std::string> seen;
    for (std::uint8_t i = 0; i < error_code_count; ++i) {
        const auto code = static_cast<error_code>(i);
        const std::string wire(wire_code(code));
        SCOPED_TRACE(wire);
        EXPECT_TRUE(seen.insert(wire).second) << "duplicate wire code";
        for (char c : wire) EXPECT_TRUE((c >= 'A' && c <= 'Z') || c == '_');
        const unsigned status = http_status(code);
        EXPECT_TRUE(status >= 400 && status <= 599);
    }
}

TEST(ErrorCodes, StatusesFollowTheSpecTable) {
    EXPECT_EQ(http_status(error_code::invalid_offset), 400u);
    EXPECT_EQ(http_status(error_code::producer_key_conflict), 403u);
    EXPECT_EQ(http_status(error_code::stream_not_found), 404u);
    EXPECT_EQ(http_status(error_code::stream_seq_conflict), 409u);
    EXPECT_EQ(http_status(error_code::stream_gone), 410u);
    EXPECT_EQ(http_status(error_code::incarnation_mismatch), 412u);
    EXPECT_EQ(http_status(error_code::request_too_large), 413u);
    EXPECT_EQ(http_status(error_code::offset_out_of_range), 416u);
    EXPECT_EQ(http_status(error_code::producer_limit), 429u);
    EXPECT_EQ(http_status(error_code::internal), 500u);
    EXPECT_EQ(http_status(error_code::wal_disk_pressure), 503u);
    EXPECT_EQ(http_status(error_code::cold_store_failed), 502u);
    EXPECT_EQ(http_status(error_code::cold_backpressure), 503u);
}

TEST(ErrorCodes, WriteOutcomeClassification) {
    // Every 4xx proves a refusal (11.1); among 5xx only the listed codes do.
    for (std::uint8_t i = 0; i < error_code_count; ++i) {
        const auto code = static_cast<error_code>(i);
        if (http_status(code) < 500) {
            EXPECT_TRUE(proves_refusal(code)) << wire_code(code);
        }
    }
    EXPECT_TRUE(proves_refusal(error_code::wal_disk_pressure));
    EXPECT_TRUE(proves_refusal(error_code::no_leader));
    EXPECT_TRUE(proves_refusal(error_code::ingress_body_bytes_limit_reached));
    EXPECT_TRUE(proves_refusal(error_code::no_cold_store));
    EXPECT_TRUE(proves_refusal(error_code::cold_backpressure));
    EXPECT_FALSE(proves_refusal(error_code::outcome_unknown));
    EXPECT_FALSE(proves_refusal(error_code::internal));
    EXPECT_FALSE(proves_refusal(error_code::cold_store_failed));
    EXPECT_FALSE(proves_refusal(error_code::live_read_backpressure));
    // extensions 11.1: a busy node refused before the copy; an earlier
    // attempt of the same commit may still apply.
    EXPECT_TRUE(proves_refusal(error_code::snapshot_commits_busy));
    EXPECT_FALSE(proves_refusal(error_code::snapshot_commit_in_progress));
}

}  // namespace
}  // namespace dstream::protocol
