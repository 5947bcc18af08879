// The pieces of the client commands that parse what a server sends.
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "cli/client/multipart.h"
#include "cli/client/sse_reader.h"
#include "protocol/sse.h"

namespace dstream::cli::client {
namespace {

std::vector<sse_event> read_all(const std::vector<std::string>& pieces) {
    sse_reader reader;
    std::vector<sse_event> events;
    for (const auto& p : pieces) {
        reader.feed(p, [&](const sse_event& e) {
            events.push_back(e);
            return true;
        });
    }
    return events;
}

TEST(sse_reader, events_split_across_pieces_and_line_endings) {
    const auto events = read_all({"event: data\r", "\ndata:a\r\ndata: b\n",
                                  "\nevent: control\rdata:{}\r\r", ": comment\n\nid: 3\ndata\n\n"});
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0].name, "data");
    EXPECT_EQ(events[0].data, "a\nb");
    EXPECT_EQ(events[1].name, "control");
    EXPECT_EQ(events[1].data, "{}");
    // A bare "data" field is an empty data line.
    EXPECT_EQ(events[2].name, "message");
    EXPECT_EQ(events[2].data, "");
}

TEST(sse_reader, one_extra_space_survives_and_a_trailing_line_break_is_kept) {
    const auto events = read_all({"data:  x\ndata:\n\n"});
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].data, " x\n");
}

TEST(sse_reader, reads_back_what_the_server_frames) {
    for (const std::string payload : {"plain", " leading space", "two\nlines", "ends in a break\n",
                                      "\r\n", "", "[{\"a\":1}]"}) {
        std::string framed;
        protocol::append_sse_event(framed, "data", payload);
        const auto events = read_all({framed});
        ASSERT_EQ(events.size(), 1u) << payload;
        // A CR or CRLF break comes back as LF: SSE cannot tell them apart.
        std::string expected = payload;
        if (expected == "\r\n") expected = "\n";
        EXPECT_EQ(events[0].data, expected);
    }
}

TEST(sse_reader, stops_when_asked) {
    sse_reader reader;
    int seen = 0;
    EXPECT_FALSE(reader.feed("data:1\n\ndata:2\n\n", [&](const sse_event&) { return ++seen < 1; }));
    EXPECT_EQ(seen, 1);
}

TEST(multipart, parts_with_and_without_headers) {
    const std::string body =
        "--b1\r\nContent-Type: application/octet-stream\r\n\r\nsnap\r\nshot\r\n"
        "--b1\r\ncontent-type: application/json\r\n\r\n{\"a\":1}\r\n"
        "--b1\r\n\r\n\r\n--b1--\r\n";
    const auto parts = split_multipart("multipart/mixed; boundary=b1", body);
    ASSERT_TRUE(parts);
    ASSERT_EQ(parts->size(), 3u);
    EXPECT_EQ((*parts)[0].content_type, "application/octet-stream");
    EXPECT_EQ((*parts)[0].body, "snap\r\nshot");
    EXPECT_EQ((*parts)[1].content_type, "application/json");
    EXPECT_EQ((*parts)[1].body, "{\"a\":1}");
    EXPECT_EQ((*parts)[2].content_type, "");
    EXPECT_EQ((*parts)[2].body, "");
}

TEST(multipart, quoted_boundary_and_malformed_bodies) {
    EXPECT_TRUE(split_multipart("multipart/mixed; boundary=\"x y\"", "--x y\r\n\r\nz\r\n--x y--"));
    EXPECT_FALSE(split_multipart("multipart/mixed", "--b\r\n\r\nz\r\n--b--"));
    EXPECT_FALSE(split_multipart("multipart/mixed; boundary=b", "--b\r\n\r\nno closing delimiter"));
    EXPECT_FALSE(split_multipart("multipart/mixed; boundary=b", "preamble--b--"));
}

}  // namespace
}  // namespace dstream::cli::client
