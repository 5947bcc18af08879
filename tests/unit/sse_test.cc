#include "protocol/sse.h"

#include <random>
#include <string>
#include <string_view>
#include <vector>

#include <gtest/gtest.h>

namespace dstream::protocol {
namespace {

using namespace std::string_literals;

// A reader of text/event-stream per the WHATWG HTML "event stream
// interpretation" algorithm: what an EventSource client reconstructs.
struct sse_event {
    std::string type;
    std::string data;
};

std::vector<sse_event> parse_event_stream(std::string_view in) {
    std::vector<sse_event> events;
    std::string type;
    std::string data;
    std::size_t pos = 0;
    while (pos < in.size()) {
        const std::size_t brk = in.find_first_of("\r\n", pos);
        if (brk == std::string_view::npos) break;  // an unterminated last line is discarded
        const std::string_view line = in.substr(pos, brk - pos);
        pos = brk + 1;
        if (in[brk] == '\r' && pos < in.size() && in[pos] == '\n') ++pos;
        if (line.empty()) {
            if (!data.empty()) {
                data.pop_back();  // the final LF
                events.push_back({type.empty() ? "message" : type, data});
            }
            type.clear();
            data.clear();
            continue;
        }
        if (line.front() == ':') continue;
        std::string_view field = line;
        std::string_view value;
        if (const auto colon = line.find(':'); colon != std::string_view::npos) {
            field = line.substr(0, colon);
            value = line.substr(colon + 1);
            if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
        }
        if (field == "event") {
            type = value;
        } else if (field == "data") {
            data.append(value).push_back('\n');
        }
    }
    return events;
}

std::string framed(std::string_view name, std::string_view payload) {
    std::string out;
    append_sse_event(out, name, payload);
    return out;
}

// CR and CRLF become LF: the one change SSE framing can make to text.
std::string normalize_breaks(std::string_view s) {
    std::string out;
    for (std::size_t i = 0; i < s.size(); ++i) {
        if (s[i] == '\r') {
            out.push_back('\n');
            if (i + 1 < s.size() && s[i + 1] == '\n') ++i;
        } else {
            out.push_back(s[i]);
        }
    }
    return out;
}

TEST(SseFraming, ExactBytesForSimplePayloads) {
    struct row {
        std::string payload;
        std::string expected;
    };
    const row rows[] = {
        {"", "event: data\ndata:\n\n"},
        {"hello", "event: data\ndata:hello\n\n"},
        {"a\nb", "event: data\ndata:a\ndata:b\n\n"},
        {"a\rb", "event: data\ndata:a\ndata:b\n\n"},
        {"a\r\nb", "event: data\ndata:a\ndata:b\n\n"},
        {"a\n\nb", "event: data\ndata:a\ndata:\ndata:b\n\n"},
        {"a\r\rb", "event: data\ndata:a\ndata:\ndata:b\n\n"},
        {"a\n\rb", "event: data\ndata:a\ndata:\ndata:b\n\n"},  // LF then CR: two breaks
        {"a\r\n\r\nb", "event: data\ndata:a\ndata:\ndata:b\n\n"},
        {"\nb", "event: data\ndata:\ndata:b\n\n"},
        {"{\"k\":\"v\"}", "event: data\ndata:{\"k\":\"v\"}\n\n"},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.payload);
        EXPECT_EQ(framed("data", r.payload), r.expected);
    }
}

TEST(SseFraming, AppendsToExistingOutput) {
    std::string out = "prefix";
    append_sse_event(out, "control", "{}");
    EXPECT_EQ(out, "prefixevent: control\ndata:{}\n\n");
}

TEST(SseFraming, EveryLineOfTheEventIsAFieldAndOnlyTheLastIsBlank) {
    const std::string payloads[] = {
        "x\n\nevent: evil\ndata: injected\n\nid: 5\rretry: 1\r\n\r\n:comment",
        "\r\n\r\n\r\n",
        "\n\n",
        "\r\r",
        "event: control\r\ndata: {\"streamClosed\":true}\r\n\r\n",
    };
    for (const auto& p : payloads) {
        SCOPED_TRACE(p);
        const std::string out = framed("data", p);
        // Split the output on the framing's own LFs: only the terminator is blank.
        ASSERT_GE(out.size(), 2u);
        ASSERT_EQ(out.substr(out.size() - 2), "\n\n");
        EXPECT_EQ(out.find('\r'), std::string::npos) << "a CR would end a line for the reader";
        const std::string body = out.substr(0, out.size() - 1);
        std::size_t pos = 0;
        bool first = true;
        while (pos < body.size()) {
            const std::size_t lf = body.find('\n', pos);
            ASSERT_NE(lf, std::string::npos);
            const std::string line = body.substr(pos, lf - pos);
            if (first) {
                EXPECT_EQ(line, "event: data");
            } else {
                EXPECT_EQ(line.rfind("data:", 0), 0u) << "line '" << line << "'";
            }
            first = false;
            pos = lf + 1;
        }
    }
}

TEST(SseFraming, InjectionAttemptYieldsExactlyOneEventOfTheGivenType) {
    const std::string payload = "x\n\nevent: evil\ndata: injected\n\nid: 5\rretry: 1";
    const auto events = parse_event_stream(framed("data", payload));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(events[0].type, "data");
    EXPECT_EQ(events[0].data, normalize_breaks(payload));
}

TEST(SseFraming, SeveralEventsParseBackInOrder) {
    std::string out;
    append_sse_event(out, "data", "one\ntwo");
    append_sse_event(out, "control", "{\"streamNextOffset\":\"00000000000000000007\"}");
    append_sse_event(out, "data", "three");
    const auto events = parse_event_stream(out);
    ASSERT_EQ(events.size(), 3u);
    EXPECT_EQ(events[0].type, "data");
    EXPECT_EQ(events[0].data, "one\ntwo");
    EXPECT_EQ(events[1].type, "control");
    EXPECT_EQ(events[1].data, "{\"streamNextOffset\":\"00000000000000000007\"}");
    EXPECT_EQ(events[2].data, "three");
}

TEST(SseFraming, RandomPayloadsRoundTripModuloLineBreakNormalization) {
    // Payloads whose lines do not start with a space and that do not end in a
    // line break (see the two BUG tests below for those).
    std::mt19937 rng(99);
    const char alphabet[] = {'a', 'b', ':', ' ', '\n', '\r', '{', '"'};
    for (int i = 0; i < 3000; ++i) {
        std::string p;
        const int n = static_cast<int>(rng() % 24);
        for (int k = 0; k < n; ++k) p.push_back(alphabet[rng() % sizeof alphabet]);
        const std::string norm = normalize_breaks(p);
        if (!norm.empty() && norm.back() == '\n') continue;
        if (norm.starts_with(' ') || norm.find("\n ") != std::string::npos) continue;
        const auto events = parse_event_stream(framed("data", p));
        ASSERT_EQ(events.size(), 1u) << testing::PrintToString(p);
        ASSERT_EQ(events[0].data, norm) << testing::PrintToString(p);
    }
}

TEST(SseFraming, LineStartingWithSpaceKeepsItsSpace) {
    for (const std::string& p : {" indented"s, "a\n  two spaces"s, " "s}) {
        SCOPED_TRACE(p);
        const auto events = parse_event_stream(framed("data", p));
        ASSERT_EQ(events.size(), 1u);
        EXPECT_EQ(events[0].data, p);
    }
}

TEST(SseFraming, TrailingLineBreakIsPreserved) {
    EXPECT_NE(framed("data", "a"), framed("data", "a\n"));
    for (const std::string& p : {"a\n"s, "{\"k\":1}\n{\"k\":2}\n"s, "\n"s, "a\n\n"s}) {
        SCOPED_TRACE(p);
        const auto events = parse_event_stream(framed("data", p));
        ASSERT_EQ(events.size(), 1u);
        EXPECT_EQ(events[0].data, p);
    }
}

// ------------------------------------------------------------ control events

TEST(SseControl, RendersOnlyTheFieldsThatApply) {
    struct row {
        std::uint64_t next;
        const char* cursor;  // null: none
        bool up_to_date;
        bool closed;
        std::string json;
    };
    const std::vector<row> rows = {
        {0, nullptr, false, false, R"({"streamNextOffset":"00000000000000000000"})"},
        {123, "4567", false, false,
         R"({"streamNextOffset":"00000000000000000123","streamCursor":"4567"})"},
        {5, "9", true, false,
         R"({"streamNextOffset":"00000000000000000005","streamCursor":"9","upToDate":true})"},
        {5, nullptr, true, true,
         R"({"streamNextOffset":"00000000000000000005","upToDate":true,"streamClosed":true})"},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.json);
        // Appended after what the reader was already sent, as one event.
        std::string out = "event: data\ndata:x\n\n";
        control_event c;
        c.next_offset = r.next;
        if (r.cursor != nullptr) c.cursor = r.cursor;
        c.up_to_date = r.up_to_date;
        c.closed = r.closed;
        append_control_event(out, c);
        EXPECT_EQ(out, "event: data\ndata:x\n\nevent: control\ndata:" + r.json + "\n\n");
    }
}

// ------------------------------------------------------------------- base64

std::string b64(std::string_view bytes) {
    std::string out;
    append_base64(out, bytes);
    return out;
}

std::string unb64(std::string_view text) {
    static const std::string alphabet =
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    std::string out;
    std::uint32_t acc = 0;
    int bits = 0;
    for (char c : text) {
        if (c == '=') break;
        const auto v = alphabet.find(c);
        EXPECT_NE(v, std::string::npos) << "not in the alphabet: " << c;
        acc = acc << 6 | static_cast<std::uint32_t>(v);
        bits += 6;
        if (bits >= 8) {
            bits -= 8;
            out.push_back(static_cast<char>(acc >> bits & 0xff));
        }
    }
    return out;
}

TEST(Base64, Rfc4648TestVectors) {
    struct row {
        const char* in;
        const char* out;
    };
    const row rows[] = {
        {"", ""},
        {"f", "Zg=="},
        {"fo", "Zm8="},
        {"foo", "Zm9v"},
        {"foob", "Zm9vYg=="},
        {"fooba", "Zm9vYmE="},
        {"foobar", "Zm9vYmFy"},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.in);
        EXPECT_EQ(b64(r.in), r.out);
    }
}

TEST(Base64, BinaryBytesUseTheStandardAlphabet) {
    EXPECT_EQ(b64("\x00\x00\x00"s), "AAAA");
    EXPECT_EQ(b64("\xff\xff\xff"s), "////");
    EXPECT_EQ(b64("\xfb\xff"s), "+/8=");
    EXPECT_EQ(b64("\x00"s), "AA==");
    EXPECT_EQ(b64("\xff"s), "/w==");
    EXPECT_EQ(b64("\x01\x02\x03\x04\x05\x06"s), "AQIDBAUG");
    EXPECT_EQ(b64("\x07\x08\x09\x0a"s), "BwgJCg==");
}

TEST(Base64, AppendsAndRoundTripsEveryLength) {
    std::string all;
    for (int i = 0; i < 256; ++i) all.push_back(static_cast<char>(i));
    for (std::size_t n = 0; n <= all.size(); ++n) {
        const std::string_view bytes(all.data(), n);
        std::string out = "x";
        append_base64(out, bytes);
        ASSERT_EQ(out[0], 'x');
        const std::string text = out.substr(1);
        ASSERT_EQ(text.size() % 4, 0u);
        ASSERT_EQ(text.size(), (n + 2) / 3 * 4);
        ASSERT_EQ(unb64(text), std::string(bytes)) << n;
    }
}

TEST(Base64, OutputNeverContainsLineBreaks) {
    std::string bytes(3000, '\0');
    std::mt19937 rng(3);
    for (auto& c : bytes) c = static_cast<char>(rng());
    const std::string text = b64(bytes);
    EXPECT_EQ(text.find_first_of("\r\n"), std::string::npos);
    const auto events = parse_event_stream(framed("data", text));
    ASSERT_EQ(events.size(), 1u);
    EXPECT_EQ(unb64(events[0].data), bytes);
}

}  // namespace
}  // namespace dstream::protocol
