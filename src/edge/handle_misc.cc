#include "edge/handlers.h"
#include "edge/headers.h"
#include "metrics/exposition.h"
#include "metrics/registry.h"

namespace dstream::edge {

boost::asio::awaitable<void> handle_options(exchange& ex) {
    response res = ex.make_response(http::status::no_content);
    res.set(http::field::access_control_allow_methods, "GET, HEAD, PUT, POST, DELETE, OPTIONS");
    res.set(http::field::access_control_allow_headers, hdr::allowed_request_headers);
    res.set(http::field::access_control_max_age, "86400");
    co_await ex.send(res);
}

// Operator routes under /__ursula/ (extensions 1.6 keeps the prefix for them).
// The node listens only after recovery finished; /ready also waits for a
// leader of every group the node hosts (a cluster), and turns 503 when a
// graceful stop begins, so a load balancer takes it out first. /health says
// only that the process answers. /metrics is the Prometheus scrape,
// /cluster each hosted group's Raft state (a cluster only).
boost::asio::awaitable<void> handle_operator(exchange& ex) {
    const std::string& path = ex.target().path;
    const node_status* status = ex.options().status;
    const bool scrape = path == "/__ursula/metrics";
    const bool cluster = path == "/__ursula/cluster" && status != nullptr &&
                         ex.options().cluster != nullptr;
    const bool known =
        scrape || cluster || path == "/__ursula/health" || path == "/__ursula/ready";
    if (!known || (ex.req().method() != http::verb::get && ex.req().method() != http::verb::head)) {
        response res = ex.make_error(make_error(protocol::error_code::not_found, "no such operator route"));
        co_await ex.send(res);
        co_return;
    }
    const bool ready = status == nullptr || status->ready();
    const bool unready = path == "/__ursula/ready" && !ready;
    response res = ex.make_response(unready ? http::status::service_unavailable : http::status::ok);
    res.set(http::field::cache_control, "no-store");
    if (scrape) {
        res.set(http::field::content_type, metrics::exposition_content_type);
        res.body() = metrics::node_registry().render();
    } else if (cluster) {
        res.set(http::field::content_type, "application/json");
        res.body() = status->cluster_json();
    } else {
        res.set(http::field::content_type, "application/json");
        if (unready) res.set(http::field::retry_after, "1");
        res.body() = path.ends_with("health") ? R"({"status":"live"})"
                     : unready               ? R"({"status":"not ready"})"
                                             : R"({"status":"ready"})";
    }
    co_await ex.send(res);
}

// extensions 1.2: buckets are implicit; PUT /{bucket_id} validates the id
// (the route already refused an invalid one) and changes no state.
boost::asio::awaitable<void> handle_bucket(exchange& ex) {
    response res = ex.make_response(http::status::created);
    co_await ex.send(res);
}

}  // namespace dstream::edge
