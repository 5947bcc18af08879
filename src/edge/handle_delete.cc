#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/write_answer.h"

namespace dstream::edge {

boost::asio::awaitable<void> handle_delete(exchange& ex) {
    auto incarnation = incarnation_precondition(ex.req());
    if (!incarnation) {
        response res = ex.make_error(incarnation.err());
        co_await ex.send(res);
        co_return;
    }
    state::command_body body = state::delete_stream{ex.target().key, *incarnation};
    const state::apply_result r = co_await ex.service().write(body);
    if (r.refusal) {
        response res = render_refusal(ex, r);
        co_await ex.send(res);
        co_return;
    }
    response res = ex.make_response(http::status::no_content);
    co_await ex.send(res);
}

}  // namespace dstream::edge
