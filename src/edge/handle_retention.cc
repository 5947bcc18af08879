// extensions 2.2, Retention: PUT {stream}/retention/{offset}.
#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/write_answer.h"

namespace dstream::edge {

boost::asio::awaitable<void> handle_retention(exchange& ex, std::uint64_t offset) {
    auto incarnation = incarnation_precondition(ex.req());
    if (!incarnation) {
        response res = ex.make_error(incarnation.err());
        co_await ex.send(res);
        co_return;
    }
    state::command_body body = state::retain{ex.target().key, *incarnation, offset};
    const state::apply_result r = co_await ex.service().write(body);
    if (r.refusal) {
        response res = render_refusal(ex, r);
        co_await ex.send(res);
        co_return;
    }
    response res = ex.make_response(http::status::no_content);
    res.set(hdr::stream_incarnation, std::to_string(*r.incarnation));
    set_offset_header(res, hdr::stream_retained_offset, *r.retained_offset);
    co_await ex.send(res);
}

}  // namespace dstream::edge
