#include "edge/request_head.h"

#include <string>

#include <gtest/gtest.h>

namespace dstream::edge {
namespace {

request_head_check check(std::string_view buffered) {
    request_head_scan scan;
    return check_request_head(buffered, scan);
}

TEST(RequestHead, WaitsForTheEndOfTheHead) {
    for (const char* s : {"", "G", "GET / HTTP/1.1", "GET / HTTP/1.1\r", "A B C",
                          "GET / HTTP/1.1\r\nHost: x\r\n", "GET / HTTP/1.1\r\nHost: x\r\n\r"}) {
        SCOPED_TRACE(s);
        EXPECT_EQ(check(s), request_head_check::incomplete);
    }
}

TEST(RequestHead, LeavesWellShapedHeadsToBeast) {
    for (const char* s : {"GET / HTTP/1.1\r\n\r\n", "GET / HTTP/1.1\r\nHost: x\r\n\r\nbody",
                          "GET / HTTP/9.9\r\n\r\n", "HELLO WORLD FOOBARBA\r\n\r\n"}) {
        SCOPED_TRACE(s);
        EXPECT_EQ(check(s), request_head_check::complete);
    }
}

// These used to wait for the idle timeout: Beast wants 8 bytes of version.
TEST(RequestHead, RefusesAShortVersionTokenAtOnce) {
    for (const char* s : {"A B C\r\n\r\n", "GET / X\r\n\r\n", "GET / HTTP/1\r\n", "GET /\r\n",
                          "\r\n", "GET / HTTP/1.10\r\n"}) {
        SCOPED_TRACE(s);
        EXPECT_EQ(check(s), request_head_check::malformed);
    }
}

TEST(RequestHead, RefusesABareLineFeed) {
    EXPECT_EQ(check("GET / HTTP/1.1\n\n"), request_head_check::malformed);
}

TEST(RequestHead, CountsEveryByteOfTheHeadAgainstTheLimit) {
    const std::string line = "GET / HTTP/1.1\r\n";
    const std::string fits =
        line + "X: " + std::string(max_request_head_bytes - line.size() - 7, 'a') + "\r\n\r\n";
    ASSERT_EQ(fits.size(), max_request_head_bytes);
    EXPECT_EQ(check(fits), request_head_check::complete);
    const std::string over =
        line + "X: " + std::string(max_request_head_bytes - line.size() - 6, 'a') + "\r\n\r\n";
    EXPECT_EQ(check(over), request_head_check::too_large);
    EXPECT_EQ(check(std::string(max_request_head_bytes, 'G')), request_head_check::too_large);
}

TEST(RequestHead, ResumesWhereItLeftOff) {
    const std::string head = "GET / HTTP/1.1\r\nHost: x\r\n\r\n";
    request_head_scan scan;
    for (std::size_t n = 0; n < head.size(); ++n) {
        SCOPED_TRACE(n);
        ASSERT_EQ(check_request_head(std::string_view(head).substr(0, n), scan),
                  request_head_check::incomplete);
    }
    EXPECT_EQ(check_request_head(head, scan), request_head_check::complete);
    // A bad request line is seen however the bytes came.
    const std::string bad = "A B C\r\n\r\n";
    request_head_scan again;
    const std::size_t line_end = bad.find('\n') + 1;
    for (std::size_t n = 0; n < line_end; ++n) {
        ASSERT_EQ(check_request_head(std::string_view(bad).substr(0, n), again),
                  request_head_check::incomplete);
    }
    EXPECT_EQ(check_request_head(std::string_view(bad).substr(0, line_end), again),
              request_head_check::malformed);
}

}  // namespace
}  // namespace dstream::edge
