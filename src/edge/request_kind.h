#pragma once
// What a request is, for the metrics and the shutdown log: the operation its
// route and method select, with live reads apart from catch-up reads (a
// long-poll's latency is its wait, not the server's speed).
#include <cstddef>
#include <ostream>  // Beast's verb.hpp streams without including it
#include <string_view>

#include <boost/beast/http/verb.hpp>

#include "edge/query.h"
#include "edge/route.h"

namespace dstream::edge {

enum class request_kind {
    create,
    append,
    delete_stream,
    head,
    read,
    long_poll,
    sse,
    snapshot,
    retention,
    bootstrap,
    immutable,
    bucket,
    options,
    operator_route,
    other,  // unroutable, malformed, or a method the resource does not take
};
inline constexpr std::size_t request_kind_count = 15;

// The `route` label value.
std::string_view name(request_kind kind);

request_kind classify(const route& r, boost::beast::http::verb method, const query_params& q);

}  // namespace dstream::edge
