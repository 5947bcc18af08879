#pragma once
// The HTTP messages of the edge: Beast's, with string bodies. Apart from
// exchange.h so that the parsers (edge_parsing) need no engine or coroutine.
#include <boost/beast/http/message.hpp>
#include <boost/beast/http/string_body.hpp>

namespace dstream::edge {

namespace http = boost::beast::http;
using request = http::request<http::string_body>;
using response = http::response<http::string_body>;

}  // namespace dstream::edge
