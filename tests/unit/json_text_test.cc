#include "protocol/json_text.h"

#include <gtest/gtest.h>

#include <string>
#include <string_view>
#include <vector>

namespace dstream::protocol {
namespace {

using namespace std::string_literals;

struct valid_case {
    std::string body;
    std::string stored;
    std::size_t count;
};

void expect_valid(const valid_case& c, empty_array_rule rule = empty_array_rule::reject) {
    SCOPED_TRACE("body: " + c.body);
    const auto r = normalize_json_body(c.body, rule);
    ASSERT_TRUE(r.ok()) << r.err().message;
    EXPECT_EQ(r->stored, c.stored);
    EXPECT_EQ(r->count, c.count);
    EXPECT_LE(r->stored.size(), c.body.size() + c.count);
}

void expect_invalid(const std::string& body, empty_array_rule rule = empty_array_rule::allow) {
    SCOPED_TRACE("body: " + body);
    const auto r = normalize_json_body(body, rule);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, error_code::invalid_request);
    EXPECT_NE(r.err().message.find(" at byte "), std::string::npos) << r.err().message;
}

std::string error_message(const std::string& body) {
    const auto r = normalize_json_body(body, empty_array_rule::allow);
    EXPECT_FALSE(r.ok());
    return r.ok() ? std::string() : r.err().message;
}

std::string nested_arrays(int depth) { return std::string(depth, '[') + std::string(depth, ']'); }

std::string nested_objects(int depth) {
    std::string s;
    for (int i = 0; i < depth; ++i) {
        s += "{\"k\":";
    }
    s += "1";
    s.append(depth, '}');
    return s;
}

TEST(json_text, scalars_are_one_message) {
    for (const valid_case& c : std::vector<valid_case>{
             {"1", "1\n", 1},
             {"\"x\"", "\"x\"\n", 1},
             {"true", "true\n", 1},
             {"false", "false\n", 1},
             {"null", "null\n", 1},
             {"\"\"", "\"\"\n", 1},
             {" \t\r\n 42 \r\n", "42\n", 1},
         }) {
        expect_valid(c);
    }
}

TEST(json_text, flattening_examples_from_the_base_protocol) {
    for (const valid_case& c : std::vector<valid_case>{
             {R"({"event": "created"})", "{\"event\":\"created\"}\n", 1},
             {R"([{"event": "a"}, {"event": "b"}])", "{\"event\":\"a\"}\n{\"event\":\"b\"}\n", 2},
             {"[[1,2], [3,4]]", "[1,2]\n[3,4]\n", 2},
             {"[[[1,2,3]]]", "[[1,2,3]]\n", 1},
             {"[1]", "1\n", 1},
             {"[[]]", "[]\n", 1},
             {"[{}]", "{}\n", 1},
             {"[ 1 , \"a b\" , {\"k\" : null} ]", "1\n\"a b\"\n{\"k\":null}\n", 3},
             {"\n[\n  true,\n  [ ],\n  { }\n]\n", "true\n[]\n{}\n", 3},
             {"{}", "{}\n", 1},
         }) {
        expect_valid(c);
    }
}

TEST(json_text, empty_array_follows_the_rule) {
    for (const std::string body : {"[]", "[ ]", " [\r\n\t] "}) {
        SCOPED_TRACE(body);
        const auto allowed = normalize_json_body(body, empty_array_rule::allow);
        ASSERT_TRUE(allowed.ok()) << allowed.err().message;
        EXPECT_EQ(allowed->count, 0U);
        EXPECT_EQ(allowed->stored, "");

        const auto rejected = normalize_json_body(body, empty_array_rule::reject);
        ASSERT_FALSE(rejected.ok());
        EXPECT_EQ(rejected.err().code, error_code::empty_append);
    }
}

TEST(json_text, invalid_json_wins_over_empty_array) {
    expect_invalid("[] x", empty_array_rule::reject);
    expect_invalid("[] []", empty_array_rule::reject);
    expect_invalid("[", empty_array_rule::reject);
}

TEST(json_text, whitespace_is_removed_outside_strings_only) {
    for (const valid_case& c : std::vector<valid_case>{
             {R"( { "a" : [ 1 , 2 ] , "b" : "x  y" } )", "{\"a\":[1,2],\"b\":\"x  y\"}\n", 1},
             {"{\r\n  \"a\": {\r\n    \"b\": [\r\n      null\r\n    ]\r\n  }\r\n}\r\n", "{\"a\":{\"b\":[null]}}\n", 1},
             {R"({"k y" : " v "})", "{\"k y\":\" v \"}\n", 1},
             {R"(" \t \n \r ")", "\" \\t \\n \\r \"\n", 1},
             {R"(["a, b", "[ ]"])", "\"a, b\"\n\"[ ]\"\n", 2},
         }) {
        expect_valid(c);
    }
}

TEST(json_text, members_are_not_reordered_or_merged) {
    for (const valid_case& c : std::vector<valid_case>{
             {R"({"b": 1, "a": 2})", "{\"b\":1,\"a\":2}\n", 1},
             {R"({"a": 1, "a": 2, "a": 1})", "{\"a\":1,\"a\":2,\"a\":1}\n", 1},
         }) {
        expect_valid(c);
    }
}

TEST(json_text, numbers_are_kept_as_written) {
    for (const std::string n : {"0", "-0", "1", "-1", "1.50e3", "1e400", "-1e-400", "1E+2", "1e-2", "0.0", "0e0",
                                "-0.0E-0", "123456789012345678901234567890", "0.000000000000000000000001",
                                "3.141592653589793238462643383279"}) {
        expect_valid({n, n + "\n", 1});
        expect_valid({"[" + n + "," + n + "]", n + "\n" + n + "\n", 2});
        expect_valid({"{\"n\":" + n + "}", "{\"n\":" + n + "}\n", 1});
    }
}

TEST(json_text, invalid_numbers_are_rejected) {
    for (const std::string n : {"01", "-01", "00", "1.", "-1.", ".5", "-.5", "-", "- 1", "+1", "1e", "1e+", "1E-",
                                "1.e5", "0x10", "1_000", "NaN", "-NaN", "Infinity", "-Infinity", "1.5.2", "1e5e5",
                                "--1", "0.", "1ee5"}) {
        expect_invalid(n);
        expect_invalid("[" + n + "]");
        expect_invalid("{\"n\":" + n + "}");
    }
}

TEST(json_text, escapes_are_copied_verbatim) {
    for (const std::string s : {R"("\"\\\/\b\f\n\r\t")", R"("\u00e9\u00E9")", R"("\uD834\uDD1E")", R"("\ud800")",
                                R"("\udc00")", R"("\uDFFF\uD800")", R"("\u0000")", R"("a\u0022b")", R"("\\u12")"}) {
        expect_valid({s, s + "\n", 1});
        expect_valid({"{" + s + ":" + s + "}", "{" + s + ":" + s + "}\n", 1});
    }
}

TEST(json_text, invalid_escapes_are_rejected) {
    for (const std::string s : {R"("\x41")", R"("\a")", R"("\'")", R"("\U0041")", R"("\u12")", R"("\u12G4")",
                                R"("\0")", R"("\)", R"("\u")", R"("\u123")", "\"\\\n\"", R"("\ ")"}) {
        expect_invalid(s);
    }
}

TEST(json_text, control_characters_in_strings_are_rejected) {
    for (int c = 0; c < 0x20; ++c) {
        expect_invalid("\"a" + std::string(1, static_cast<char>(c)) + "b\"");
    }
    expect_valid({"\"\x7f\"", "\"\x7f\"\n", 1});
}

TEST(json_text, valid_utf8_is_accepted) {
    for (const std::string s : {"\xC2\x80", "\xC3\xA9", "\xDF\xBF", "\xE0\xA0\x80", "\xE2\x82\xAC", "\xED\x9F\xBF",
                                "\xEE\x80\x80", "\xEF\xBF\xBF", "\xF0\x90\x80\x80", "\xF0\x9D\x84\x9E",
                                "\xF4\x8F\xBF\xBF", "\xF3\xBF\xBF\xBF"}) {
        const std::string body = "\"" + s + "\"";
        expect_valid({body, body + "\n", 1});
    }
}

TEST(json_text, invalid_utf8_is_rejected) {
    for (const std::string s : {
             "\x80",              // lone continuation
             "\xBF",              // lone continuation
             "\xC0\xAF",          // overlong '/'
             "\xC1\xBF",          // overlong
             "\xE0\x80\xAF",      // overlong 3-byte
             "\xE0\x9F\xBF",      // overlong 3-byte
             "\xF0\x80\x80\xAF",  // overlong 4-byte
             "\xF0\x8F\xBF\xBF",  // overlong 4-byte
             "\xED\xA0\x80",      // U+D800 encoded
             "\xED\xBF\xBF",      // U+DFFF encoded
             "\xED\xA0\xBD\xED\xB2\xA9",  // CESU-8 surrogate pair
             "\xF4\x90\x80\x80",  // U+110000
             "\xF5\x80\x80\x80",  // beyond Unicode
             "\xF8\x88\x80\x80\x80",
             "\xFE",
             "\xFF",
             "\xC3",              // truncated before the quote
             "\xE2\x82",          // truncated
             "\xF0\x9D\x84",      // truncated
             "\xC3\x28",          // bad continuation
             "\xE2\x28\xA1",      // bad continuation
             "\xF0\x9D\x28\x9E",  // bad continuation
         }) {
        SCOPED_TRACE(::testing::PrintToString(s));
        expect_invalid("\"" + s + "\"");
        expect_invalid("\"abcdefghijklmnop" + s + "qrstuvwxyz\"");
        expect_invalid("\"" + s);
    }
    // Non-ASCII is never valid outside a string literal.
    expect_invalid("\xC3\xA9");
    expect_invalid("[1,\xC2\xA0" "2]");  // no-break space is not JSON whitespace
}

TEST(json_text, stop_bytes_are_found_at_every_position_of_a_long_string) {
    // Covers every offset within the eight-byte fast path and its tail.
    for (std::size_t i = 0; i < 40; ++i) {
        std::string body = "\"" + std::string(44, 'a') + "\"";
        const std::size_t at = 1 + i;

        body[at] = '\x1f';
        EXPECT_NE(error_message(body).find("at byte " + std::to_string(at)), std::string::npos) << i;

        body[at] = '\x80';
        EXPECT_NE(error_message(body).find("at byte " + std::to_string(at)), std::string::npos) << i;

        body[at] = '"';
        expect_invalid(body);  // the string ends early, leaving trailing data
        body = body.substr(0, at + 1);
        expect_valid({body, body + "\n", 1});

        body = "\"" + std::string(44, 'a') + "\"";
        body.replace(at, 2, "\\n");
        expect_valid({body, body + "\n", 1});

        body = "\"" + std::string(44, 'a') + "\"";
        body.replace(at, 3, "\xE2\x82\xAC");
        expect_valid({body, body + "\n", 1});
    }
}

TEST(json_text, structural_errors_are_rejected) {
    for (const std::string& body : std::vector<std::string>{
             "", " ", "\r\n\t ", "[", "{", "]", "}", ",", ":", "[1,]", "[,1]", "[1,,2]", "{\"a\":1,}", "{,}", "{\"a\"}",
             "{\"a\" 1}", "{\"a\"::1}", "{1:2}", "{'a':1}", "{a:1}", "[1 2]", "[1}", "{\"a\":1]", "[1]]", "{\"a\":1}}",
             "[[1]", "\"abc", "\"", "tru", "truex", "True", "nul", "nulll", "fals", "falsey", "undefined",
             "1 2", "{} {}", "\"\"\"\"", "[] []", "{\"a\":1} x", "[1,2] ,", "1\x00"s, "// c\n1", "/* c */ 1", "1 // c",
             "1#", "\x0b" "1", "1\x0c", "\xEF\xBB\xBF" "1", "{\"a\":}", "{\"a\":1 \"b\":2}", "[\"a\" \"b\"]",
         }) {
        expect_invalid(body);
    }
}

TEST(json_text, errors_name_the_byte_without_echoing_the_body) {
    const std::string body = R"({"secret": [1, 2,]})";
    const std::string message = error_message(body);
    EXPECT_NE(message.find("at byte 17"), std::string::npos) << message;
    EXPECT_EQ(message.find("secret"), std::string::npos) << message;

    EXPECT_NE(error_message("").find("at byte 0"), std::string::npos);
    EXPECT_NE(error_message("   ").find("at byte 3"), std::string::npos);
    EXPECT_NE(error_message("\"\xC3\xA9\xED\xA0\x80\"").find("UTF-8 at byte 3"), std::string::npos);
}

TEST(json_text, bare_message_depth_is_limited_to_127) {
    expect_valid({nested_objects(127), nested_objects(127) + "\n", 1});
    expect_invalid(nested_objects(128));
    // The sixth byte of each "{\"k\":" opens a level; the 128th is refused.
    EXPECT_NE(error_message(nested_objects(128)).find("depth 127 at byte 635"), std::string::npos);

    std::string mixed;
    for (int i = 0; i < 127; ++i) {
        mixed += i % 2 == 0 ? "{\"k\":" : "[";
    }
    mixed += "0";
    for (int i = 126; i >= 0; --i) {
        mixed += i % 2 == 0 ? "}" : "]";
    }
    expect_valid({mixed, mixed + "\n", 1});
    expect_invalid("{\"k\":" + mixed + "}");
}

TEST(json_text, array_body_may_be_one_level_deeper) {
    const std::string deepest = nested_arrays(127);
    expect_valid({nested_arrays(128), deepest + "\n", 1});
    expect_valid({"[" + deepest + ", 1, " + deepest + "]", deepest + "\n1\n" + deepest + "\n", 3});
    expect_valid({"[" + nested_objects(127) + "]", nested_objects(127) + "\n", 1});
    expect_invalid(nested_arrays(129));
    EXPECT_NE(error_message(nested_arrays(129)).find("depth 127 at byte 128"), std::string::npos);
    expect_invalid("[1, " + nested_objects(128) + "]");
    // An object body gains no level: its depth is the message's depth.
    expect_invalid("{\"k\":" + deepest + "}");
}

TEST(json_text, very_deep_input_is_rejected_without_recursion) {
    expect_invalid(std::string(1'000'000, '['));
    expect_invalid(std::string(1'000'000, '[') + std::string(1'000'000, ']'));
}

// Straightforward reference for valid input: drop whitespace outside strings.
std::string strip_whitespace(std::string_view text) {
    std::string out;
    bool in_string = false;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (in_string) {
            out += c;
            if (c == '\\') {
                out += text[++i];
            } else if (c == '"') {
                in_string = false;
            }
        } else if (c == '"') {
            in_string = true;
            out += c;
        } else if (c != ' ' && c != '\t' && c != '\n' && c != '\r') {
            out += c;
        }
    }
    return out;
}

TEST(json_text, large_pretty_body_matches_the_reference) {
    const std::vector<std::string> pieces = {"plain", "with space", "esc\\\"aped\\\\", "caf\xC3\xA9", "\\u00e9\\ud800",
                                             "\xF0\x9F\x98\x80 emoji", "", "a longer value that spans several words"};
    std::string body = "[\n";
    std::string expected;
    const int n = 500;
    for (int i = 0; i < n; ++i) {
        std::string message = "  {\n    \"id\" : " + std::to_string(i) + ",\n    \"name\" : \"" +
                              pieces[i % pieces.size()] + std::string(i % 17, 'x') + "\",\n    \"tags\" : [ \"" +
                              pieces[(i + 3) % pieces.size()] + "\" , -" + std::to_string(i) + ".5e-3 , true ]\n  }";
        body += message;
        body += i + 1 < n ? ",\n" : "\n";
        expected += strip_whitespace(message) + "\n";
    }
    body += "]\n";
    expect_valid({body, expected, static_cast<std::size_t>(n)});
}

}  // namespace
}  // namespace dstream::protocol
