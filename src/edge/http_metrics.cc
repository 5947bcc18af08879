#include "edge/http_metrics.h"

#include <array>
#include <numeric>
#include <string>
#include <string_view>
#include <utility>

namespace dstream::edge {

std::string_view name(h2_refusal r) {
    switch (r) {
        case h2_refusal::none:
            return "none";
        case h2_refusal::rapid_reset:
            return "rapid_reset";
        case h2_refusal::continuation_flood:
            return "continuation_flood";
        case h2_refusal::settings_flood:
            return "settings_flood";
        case h2_refusal::ping_flood:
            return "ping_flood";
        case h2_refusal::ack_flood:
            return "ack_flood";
        case h2_refusal::stall:
            return "stall";
        case h2_refusal::protocol:
            return "protocol";
    }
    return "unknown";
}

void http_metrics::record(request_kind kind, unsigned status, std::uint64_t duration_us) {
    per_kind& k = of(kind);
    k.duration_us.observe(duration_us);
    if (status >= first_status && status < first_status + status_count) {
        k.by_status[status - first_status].inc();
    }
}

void http_metrics::record_live_delivery(std::chrono::steady_clock::time_point made_at) {
    const auto waited = std::chrono::steady_clock::now() - made_at;
    live_delivery_us.observe(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(waited).count()));
}

void http_metrics::collect(metrics::exposition& out) const {
    using metrics::metric_type;
    out.family("dstream_http_requests_total", metric_type::counter,
               "HTTP requests answered, by route kind and status code");
    for (std::size_t i = 0; i < request_kind_count; ++i) {
        const std::string_view route = name(static_cast<request_kind>(i));
        for (unsigned s = 0; s < status_count; ++s) {
            const std::uint64_t n = kinds[i].by_status[s].value();
            if (n == 0) continue;
            const std::string status = std::to_string(first_status + s);
            out.sample("dstream_http_requests_total", {{"route", route}, {"status", status}}, n);
        }
    }
    out.family("dstream_http_request_duration_seconds", metric_type::histogram,
               "Time from a request's head to the end of its answer, by route kind (live reads "
               "include their wait)");
    // Kinds no request had yet are left out: twenty bucket lines each.
    for (std::size_t i = 0; i < request_kind_count; ++i) {
        const metrics::histogram_snapshot h = kinds[i].duration_us.read();
        if (std::accumulate(h.counts.begin(), h.counts.end(), std::uint64_t{0}) == 0) continue;
        out.buckets("dstream_http_request_duration_seconds",
                    {{"route", name(static_cast<request_kind>(i))}}, h, 1e6);
    }
    out.family("dstream_http_requests_in_flight", metric_type::gauge,
               "Requests being answered, by route kind");
    for (std::size_t i = 0; i < request_kind_count; ++i) {
        out.sample("dstream_http_requests_in_flight",
                   {{"route", name(static_cast<request_kind>(i))}},
                   static_cast<double>(kinds[i].in_flight.value()));
    }
    out.gauge("dstream_http_connections", "Open HTTP connections",
              static_cast<double>(connections.value()));
    out.counter("dstream_http_connections_moved_total",
                "Plain HTTP/1.1 connections moved to the I/O thread of the stream group their "
                "requests kept going to",
                connections_moved.value());
    // The version label is the protocol's (RFC 9110 2.5: "1.1", "2"), tls
    // whether it runs over TLS.
    constexpr std::array<std::pair<std::string_view, std::string_view>, wire_protocol_count>
        protocols{{{"1.1", "false"}, {"1.1", "true"}, {"2", "false"}, {"2", "true"}}};
    out.family("dstream_http_protocol_requests_total", metric_type::counter,
               "HTTP requests answered, by protocol version and whether over TLS");
    for (std::size_t i = 0; i < wire_protocol_count; ++i) {
        out.sample("dstream_http_protocol_requests_total",
                   {{"version", protocols[i].first}, {"tls", protocols[i].second}},
                   requests_by_protocol[i].value());
    }
    out.family("dstream_http_protocol_connections", metric_type::gauge,
               "Open HTTP connections, by protocol version and whether over TLS");
    for (std::size_t i = 0; i < wire_protocol_count; ++i) {
        out.sample("dstream_http_protocol_connections",
                   {{"version", protocols[i].first}, {"tls", protocols[i].second}},
                   static_cast<double>(connections_by_protocol[i].value()));
    }
    out.family("dstream_tls_handshakes_total", metric_type::counter,
               "TLS handshakes on the listeners, by result");
    out.sample("dstream_tls_handshakes_total", {{"result", "ok"}}, tls_handshakes.value());
    out.sample("dstream_tls_handshakes_total", {{"result", "failed"}},
               tls_handshake_failures.value());
    out.family("dstream_tls_reloads_total", metric_type::counter,
               "Certificate reloads (SIGHUP), by result; a failed one keeps the previous pair");
    out.sample("dstream_tls_reloads_total", {{"result", "ok"}}, tls_reloads.value());
    out.sample("dstream_tls_reloads_total", {{"result", "failed"}}, tls_reload_failures.value());
    out.family("dstream_http2_refused_connections_total", metric_type::counter,
               "HTTP/2 connections closed for misbehaving (floods, stalled windows, protocol "
               "errors), by reason");
    for (std::size_t i = 1; i < h2_refusal_count; ++i) {
        out.sample("dstream_http2_refused_connections_total",
                   {{"reason", name(static_cast<h2_refusal>(i))}}, h2_refusals[i].value());
    }
    out.family("dstream_live_readers", metric_type::gauge,
               "Live readers waiting for or streaming new bytes, by mode");
    out.sample("dstream_live_readers", {{"mode", "long_poll"}},
               static_cast<double>(long_poll_readers.value()));
    out.sample("dstream_live_readers", {{"mode", "sse"}}, static_cast<double>(sse_readers.value()));
    out.counter("dstream_read_quota_delays_total",
                "Reads delayed because their client address was past its read quota",
                read_quota_delays.value());
    out.counter("dstream_read_bytes_sent_from_files_total",
                "Read body bytes sent from chunk files with sendfile, not copied through memory",
                bytes_sent_from_files.value());
    out.family("dstream_read_quota_delay_seconds_total", metric_type::counter,
               "Time those reads waited for the quota, in all");
    out.sample("dstream_read_quota_delay_seconds_total", {},
               static_cast<double>(read_quota_delay_us.value()) / 1e6);
    out.family("dstream_live_delivery_seconds", metric_type::histogram,
               "From a change's apply to its bytes written to a live reader waiting for it");
    out.buckets("dstream_live_delivery_seconds", {}, live_delivery_us.read(), 1e6);
    out.counter("dstream_live_direct_deliveries_total",
                "SSE updates written to a waiting reader's connection where the change was "
                "offered, without waking the reader",
                live_direct_deliveries.value());
}

}  // namespace dstream::edge
