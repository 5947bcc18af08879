#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/route.h"
#include "edge/write_answer.h"
#include "protocol/content_type.h"
#include "protocol/decimal.h"
#include "protocol/expiry.h"
#include "protocol/json_text.h"

namespace dstream::edge {
namespace {

using protocol::error_code;

// base protocol 4.2: the fork headers, or nothing when the create is no fork.
result<std::optional<service::fork_request>> parse_fork(request& req, bool content_type_given) {
    auto from = single_header(req, hdr::stream_forked_from);
    auto offset = single_header(req, hdr::stream_fork_offset);
    auto sub_offset = single_header(req, hdr::stream_fork_sub_offset);
    if (!from || !offset || !sub_offset)
        return (!from ? from : !offset ? offset : sub_offset).err();
    if (!*from) {
        if (*offset || *sub_offset) {
            return make_error(
                error_code::invalid_header,
                "Stream-Fork-Offset and Stream-Fork-Sub-Offset need Stream-Forked-From");
        }
        return std::optional<service::fork_request>();
    }
    service::fork_request fork;
    fork.content_type_given = content_type_given;
    std::string_view path = **from;
    if (path.starts_with("http://") || path.starts_with("https://")) {
        const auto slash = path.find('/', path.find("//") + 2);
        path = slash == std::string_view::npos ? std::string_view() : path.substr(slash);
    }
    auto source = resolve_route(path.substr(0, path.find('?')));
    if (!source || source->what != route::kind::stream) {
        return make_error(error_code::invalid_header,
                          "Stream-Forked-From is not a stream path on this server");
    }
    fork.source_key = std::move(source->key);
    if (*offset) {
        auto position = protocol::parse_fork_offset(**offset);
        if (!position) return position.err();
        fork.offset = *position;
    }
    if (*sub_offset) {
        auto value = protocol::parse_canonical_decimal(**sub_offset, UINT64_MAX);
        if (!value) {
            return make_error(error_code::invalid_header,
                              "Stream-Fork-Sub-Offset must be a non-negative canonical integer");
        }
        if (*value > 0 && !fork.offset) {
            return make_error(error_code::invalid_header,
                              "Stream-Fork-Sub-Offset needs Stream-Fork-Offset");
        }
        fork.sub_offset = *value;
    }
    return std::optional<service::fork_request>(std::move(fork));
}

// Builds the create command from the request; every refusal here happens
// before anything is proposed.
result<state::create_stream> parse_create(exchange& ex,
                                          std::optional<service::fork_request>& fork) {
    request& req = ex.req();
    if (has_producer_headers(req)) {
        return make_error(error_code::invalid_producer,
                          "a create cannot carry producer headers (extensions 5.1)");
    }
    state::create_stream c;
    c.key = ex.target().key;

    auto content_type = single_header(req, "Content-Type");
    if (!content_type) return content_type.err();
    auto forked = parse_fork(req, content_type->has_value());
    if (!forked) return forked.err();
    fork = std::move(*forked);
    c.content_type =
        *content_type ? std::string(**content_type) : std::string(protocol::default_content_type);
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

    // A fork without Content-Type takes its source's; its body is checked
    // against that type once the engine knows it.
    if (fork && !content_type->has_value() && !req.body().empty()) {
        return make_error(error_code::missing_content_type,
                          "a fork with a body needs its Content-Type");
    }
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
    std::optional<service::fork_request> fork;
    auto cmd = parse_create(ex, fork);
    if (!cmd) {
        response res = ex.make_error(cmd.err());
        co_await ex.send(res);
        co_return;
    }
    state::apply_result r;
    if (fork) {
        r = co_await ex.service().create_fork(*cmd, *fork);
    } else {
        state::command_body body = std::move(*cmd);
        r = co_await ex.service().write(body);
    }
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
        const std::string_view path =
            split_request_target({ex.req().target().data(), ex.req().target().size()}).path;
        res.set(http::field::location, host.empty()
                                           ? std::string(path)
                                           : "http://" + std::string(host) + std::string(path));
    }
    co_await ex.send(res);
}

}  // namespace dstream::edge
