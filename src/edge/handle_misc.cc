#include "edge/handlers.h"
#include "edge/headers.h"

namespace dstream::edge {

boost::asio::awaitable<void> handle_options(exchange& ex) {
    response res = ex.make_response(http::status::no_content);
    res.set(http::field::access_control_allow_methods, "GET, HEAD, PUT, POST, DELETE, OPTIONS");
    res.set(http::field::access_control_allow_headers, hdr::allowed_request_headers);
    res.set(http::field::access_control_max_age, "86400");
    co_await ex.send(res);
}

// extensions 1.2: buckets are implicit; PUT /{bucket_id} validates the id
// (the route already refused an invalid one) and changes no state.
boost::asio::awaitable<void> handle_bucket(exchange& ex) {
    response res = ex.make_response(http::status::created);
    co_await ex.send(res);
}

}  // namespace dstream::edge
