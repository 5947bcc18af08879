#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/write_answer.h"
#include "protocol/content_type.h"
#include "protocol/expiry.h"
#include "protocol/json_text.h"

namespace dstream::edge {
namespace {

using protocol::error_code;

// Builds the create command from the request; every refusal here happens
// before anything is proposed.
result<state::create_stream> parse_create(exchange& ex) {
    request& req = ex.req();
    if (has_producer_headers(req)) {
        return make_error(error_code::invalid_producer,
                          "a create cannot carry producer headers (extensions 5.1)");
    }
    if (req.find(hdr::stream_forked_from) != req.end()) {
        return make_error(error_code::unsupported, "stream forks are not supported yet");
    }
    state::create_stream c;
    c.key = ex.target().key;

    auto content_type = single_header(req, "Content-Type");
    if (!content_type) return content_type.err();
    c.content_type = *content_type ? std::string(**content_type)
                                   : std::string(protocol::default_content_type);
    if (!protocol::is_valid_content_type(c.content_type)) {
        return make_error(error_code::invalid_header, "Content-Type is not a valid media type");
    }

    auto ttl = single_header(req, hdr::stream_ttl);
    if (!ttl) return ttl.err();
    auto expires = single_header(req, hdr::stream_expires_at);
    if (!expires) return expires.err();
    auto expiry = protocol::parse_expiry(*ttl, *expires);
    if (!expiry) return expiry.err();
    c.expiry = *expiry;

    auto incarnation = incarnation_precondition(req);
    if (!incarnation) return incarnation.err();
    c.if_incarnation = *incarnation;
    c.closed = stream_closed_requested(req);

    if (protocol::is_json_media_type(c.content_type)) {
        if (!req.body().empty()) {
            auto messages =
                protocol::normalize_json_body(req.body(), protocol::empty_array_rule::allow);
            if (!messages) return messages.err();
            c.body = std::move(messages->stored);
        }
    } else {
        c.body = std::move(req.body());
    }
    return c;
}

}  // namespace

boost::asio::awaitable<void> handle_create(exchange& ex) {
    auto cmd = parse_create(ex);
    if (!cmd) {
        response res = ex.make_error(cmd.err());
        co_await ex.send(res);
        co_return;
    }
    state::command_body body = std::move(*cmd);
    const state::apply_result r = co_await ex.service().write(body);
    if (r.refusal) {
        response res = render_refusal(ex, r);
        co_await ex.send(res);
        co_return;
    }
    const bool created = r.kind == state::write_kind::created;
    response res = ex.make_response(created ? http::status::created : http::status::ok);
    res.set(http::field::content_type, r.content_type);
    res.set(hdr::stream_incarnation, std::to_string(*r.incarnation));
    set_offset_header(res, hdr::stream_next_offset, r.next_offset);
    if (r.closed) res.set(hdr::stream_closed, "true");
    if (created) {
        const auto host = ex.req()[http::field::host];
        res.set(http::field::location,
                host.empty() ? ex.target().path
                             : "http://" + std::string(host) + ex.target().path);
    }
    co_await ex.send(res);
}

}  // namespace dstream::edge
