#pragma once
// The request head before Beast parses it: its size limit, and an early look
// at the request line (RFC 9112 3: method SP request-target SP HTTP-version
// CRLF) and at the end of the head.
//
// Beast's parser asks for eight bytes of HTTP-version before it looks at them,
// so a complete head whose version token is shorter ("A B C\r\n\r\n") would
// wait for bytes that never come until the idle timeout; it waits the same way
// for the CRLF pair ending a head whose lines end in a bare LF, which it would
// refuse anyway. Its header limit leaves the request line out once that is
// parsed, so a head can pass it by the line's length. check_request_head()
// answers all three at once, and the limit counts every byte of the head.
#include <cstddef>
#include <string_view>

#include <boost/beast/http/parser.hpp>
#include <boost/beast/http/string_body.hpp>

#include "edge/field_arena.h"

namespace dstream::edge {

// The request line, the header fields and the empty line ending them; more is
// a 400 (the error table of extensions 11 has no code for 431, and RFC 9112
// allows any 4xx).
inline constexpr std::size_t max_request_head_bytes = 64 * 1024;

using request_parser =
    boost::beast::http::request_parser<boost::beast::http::string_body, field_allocator<char>>;

// A parser for the next request's head. No body limit yet: the parser would
// refuse an oversized Content-Length as malformed, where the server answers a
// typed 413 once it has seen the head.
void prepare_head_parser(request_parser& parser);

enum class request_head_check {
    incomplete,  // read more
    complete,    // the whole head is buffered: Beast decides
    malformed,   // the request line cannot be one: 400 now
    too_large,   // no end of the head within max_request_head_bytes: 400 now
};

// What earlier looks at a growing buffer found, so that a head arriving a
// byte at a time is not searched over and over. Starts empty for each head.
struct request_head_scan {
    std::size_t scanned = 0;  // no line end and no head end begins before this
    bool line_checked = false;
};

// `buffered`: the bytes received so far, starting at the request line.
request_head_check check_request_head(std::string_view buffered, request_head_scan& scan);

}  // namespace dstream::edge
