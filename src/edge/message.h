#pragma once
// The HTTP messages of the edge: Beast's, with string bodies. Apart from
// exchange.h so that the parsers (edge_parsing) need no engine or coroutine.
//
// Their header fields come from the connection's field_arena: a request read
// by the server is given it, and an answer takes its request's allocator.
#include <string>
#include <tuple>
#include <utility>

#include <boost/beast/http/fields.hpp>
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

#include "edge/field_arena.h"

namespace dstream::edge {

namespace http = boost::beast::http;
using fields = http::basic_fields<field_allocator<char>>;
using request = http::request<http::string_body, fields>;
using response = http::response<http::string_body, fields>;
// An answer's serialized head, from the same arena as its fields.
using head_text = std::basic_string<char, std::char_traits<char>, field_allocator<char>>;

// An answer to `req` (its version), whose fields come from where the
// request's came from.
inline response response_to(const request& req, http::status status) {
    response res(std::piecewise_construct, std::make_tuple(), std::make_tuple(req.get_allocator()));
    res.result(status);
    res.version(req.version());
    return res;
}

}  // namespace dstream::edge
