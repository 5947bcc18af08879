// The admin listener (--admin-listen): the operator routes that change data
// or read it in bulk, behind an optional bearer token. The client listener
// never reaches this file: its /__ursula/ routes are handle_operator's, which
// answers 404 to every path it does not serve.
#include "edge/admin_token.h"
#include "edge/dispatch.h"
#include "edge/headers.h"

namespace dstream::edge {

boost::asio::awaitable<void> dispatch_admin(exchange& ex) {
    const std::string& token = ex.options().admin_token;
    const request& req = ex.req();
    if (!token.empty()) {
        const auto sent = req[http::field::authorization];
        if (!bearer_token_matches(std::string_view(sent.data(), sent.size()), token)) {
            response res = ex.make_error(make_error(protocol::error_code::invalid_credential,
                                                    "the admin listener needs its bearer token"));
            res.set(http::field::www_authenticate, "Bearer");
            co_await ex.send(res);
            co_return;
        }
    }
    const request_target target =
        split_request_target(std::string_view(req.target().data(), req.target().size()));
    if (!target.path.starts_with("/__ursula/")) {
        response res = ex.make_error(make_error(protocol::error_code::not_found,
                                                "the admin listener serves /__ursula/ only"));
        co_await ex.send(res);
        co_return;
    }
    admin_request ask;
    ask.method = req.method();
    ask.path = std::string(target.path);
    ask.query = std::string(target.query);
    ask.body = std::move(ex.req().body());
    const admin_answer answer = co_await ex.options().admin->answer(ask);
    response res = ex.make_response(static_cast<http::status>(answer.status));
    res.set(http::field::content_type, "application/json");
    res.set(http::field::cache_control, "no-store");
    res.body() = answer.body;
    co_await ex.send(res);
}

}  // namespace dstream::edge
