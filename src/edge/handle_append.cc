#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/write_answer.h"
#include "protocol/content_type.h"
#include "protocol/digest.h"
#include "protocol/json_text.h"

namespace dstream::edge {
namespace {

using protocol::error_code;

// Shape faults (400 from the headers alone, extensions 5.3 step 1) refuse the
// request here. Content faults travel in the command for producer writes,
// which the producer rules decide first.
result<state::append> parse_append(exchange& ex) {
    request& req = ex.req();
    state::append c;
    c.key = ex.take_stream_key();

    auto producer = producer_headers(req);
    if (!producer) return producer.err();
    c.producer = std::move(*producer);

    auto incarnation = incarnation_precondition(req);
    if (!incarnation) return incarnation.err();
    c.if_incarnation = *incarnation;

    auto seq = single_header(req, hdr::stream_seq);
    if (!seq) return seq.err();
    if (*seq) c.stream_seq = std::string(**seq);

    auto content_type = single_header(req, "Content-Type");
    if (!content_type) return content_type.err();
    if (*content_type) c.content_type = std::string(**content_type);
    c.close = stream_closed_requested(req);

    // Producer-Digest covers the body as sent; it is checked last (extensions 5.2).
    const bool digest_matches = !c.producer || !c.producer->identity ||
                                protocol::blake3_256(req.body()) == *c.producer->identity;
    std::optional<error> fault;
    if (req.body().empty()) {
        if (!c.close)
            fault = make_error(error_code::empty_append, "an append needs a non-empty body");
    } else if (!*content_type) {
        fault = make_error(error_code::missing_content_type,
                           "an append with a body needs a Content-Type");
    } else if (protocol::is_json_media_type(c.content_type)) {
        auto messages =
            protocol::normalize_json_body(req.body(), protocol::empty_array_rule::reject);
        if (messages) {
            c.body = std::move(messages->stored);
        } else {
            fault = messages.err();
        }
    } else {
        c.body = std::move(req.body());
    }
    if (!fault && !digest_matches) {
        fault = make_error(error_code::producer_digest_mismatch,
                           "Producer-Digest does not match the body");
    }
    if (fault) {
        if (!c.producer) return *fault;
        c.body.clear();
        c.content_fault = std::move(fault);
    }
    return c;
}

}  // namespace

boost::asio::awaitable<void> handle_append(exchange& ex) {
    auto cmd = parse_append(ex);
    if (!cmd) {
        response res = ex.make_error(cmd.err());
        co_await ex.send(res);
        co_return;
    }
    const bool close_only = cmd->close && cmd->body.empty() && !cmd->content_fault;
    state::command_body body = std::move(*cmd);
    const state::apply_result r = co_await ex.service().write(body);
    response res = render_append_answer(ex, r, close_only);
    co_await ex.send(res);
}

}  // namespace dstream::edge
