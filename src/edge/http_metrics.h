#pragma once
// What the HTTP edge reports: requests by kind and status, their latency,
// requests in flight, live readers and open connections.
#include <array>
#include <chrono>
#include <cstdint>
#include <string_view>

#include "edge/request_kind.h"
#include "metrics/counter.h"
#include "metrics/gauge.h"
#include "metrics/histogram.h"
#include "metrics/registry.h"

namespace dstream::edge {

// The protocol of a connection: HTTP/1.x or HTTP/2, in clear or over TLS.
enum class wire_protocol : std::uint8_t { http1, http1_tls, h2c, h2_tls };
inline constexpr std::size_t wire_protocol_count = 4;

// Why a connection was closed for misbehaving.
enum class h2_refusal : std::uint8_t {
    none,
    rapid_reset,         // RST_STREAM faster than the bucket refills
    continuation_flood,  // a header block of too many CONTINUATION frames
    settings_flood,      // SETTINGS frames faster than the bucket refills
    ping_flood,          // PING frames likewise
    ack_flood,           // SETTINGS/PING acknowledgements the client does not read
    stall,               // an answer with no progress for body_timeout (a closed window)
    protocol,            // any other connection error nghttp2 found
};
inline constexpr std::size_t h2_refusal_count = 8;
// The metric's label.
std::string_view name(h2_refusal r);

struct http_metrics : metrics::registered<http_metrics> {
    // Every status code a response can carry, so counting takes no lock and
    // no lookup; a scrape shows the codes that occurred.
    static constexpr unsigned first_status = 100;
    static constexpr unsigned status_count = 500;

    struct per_kind {
        std::array<metrics::counter, status_count> by_status;
        metrics::histogram<metrics::bounds::latency_us> duration_us;
        metrics::gauge in_flight;
    };
    std::array<per_kind, request_kind_count> kinds;
    metrics::gauge connections;
    metrics::gauge long_poll_readers;
    metrics::gauge sse_readers;
    // From a change's apply to its bytes written to a live reader that
    // waited for it (SSE and long-poll), one observation per reader.
    metrics::histogram<metrics::bounds::latency_us> live_delivery_us;
    // Of those, the SSE updates written where they were offered, without
    // waking their reader (edge/handle_sse.cc, direct_delivery).
    metrics::counter live_direct_deliveries;
    // Reads delayed by their client's read quota, and for how long in all.
    metrics::counter read_quota_delays;
    metrics::counter read_quota_delay_us;
    // Read body bytes sent from chunk files by sendfile (never copied in).
    metrics::counter bytes_sent_from_files;
    // Plain HTTP/1.1 connections moved to the I/O thread of the group they
    // keep writing to (edge/server.h).
    metrics::counter connections_moved;
    // Requests answered and connections open, by protocol.
    std::array<metrics::counter, wire_protocol_count> requests_by_protocol;
    std::array<metrics::gauge, wire_protocol_count> connections_by_protocol;
    // TLS handshakes completed and failed (a client that left, a protocol
    // or cipher refused, the deadline), and certificate reloads.
    metrics::counter tls_handshakes;
    metrics::counter tls_handshake_failures;
    metrics::counter tls_reloads;
    metrics::counter tls_reload_failures;
    // HTTP/2 connections closed for misbehaving, by why (edge/h2_session.h).
    std::array<metrics::counter, h2_refusal_count> h2_refusals;

    per_kind& of(request_kind kind) { return kinds[static_cast<std::size_t>(kind)]; }
    metrics::counter& requests_of(wire_protocol p) {
        return requests_by_protocol[static_cast<std::size_t>(p)];
    }
    metrics::gauge& connections_of(wire_protocol p) {
        return connections_by_protocol[static_cast<std::size_t>(p)];
    }
    // One answered request; `status` 0 when the connection ended before an answer.
    void record(request_kind kind, unsigned status, std::uint64_t duration_us);
    void record_live_delivery(std::chrono::steady_clock::time_point made_at);
    void collect(metrics::exposition& out) const;
};

}  // namespace dstream::edge
