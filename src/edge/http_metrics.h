#pragma once
// What the HTTP edge reports: requests by kind and status, their latency,
// requests in flight, live readers and open connections.
#include <array>
#include <chrono>
#include <cstdint>

#include "edge/request_kind.h"
#include "metrics/counter.h"
#include "metrics/gauge.h"
#include "metrics/histogram.h"
#include "metrics/registry.h"

namespace dstream::edge {

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
    // Reads delayed by their client's read quota, and for how long in all.
    metrics::counter read_quota_delays;
    metrics::counter read_quota_delay_us;
    // Read body bytes sent from chunk files by sendfile (never copied in).
    metrics::counter bytes_sent_from_files;

    per_kind& of(request_kind kind) { return kinds[static_cast<std::size_t>(kind)]; }
    // One answered request; `status` 0 when the connection ended before an answer.
    void record(request_kind kind, unsigned status, std::uint64_t duration_us);
    void record_live_delivery(std::chrono::steady_clock::time_point made_at);
    void collect(metrics::exposition& out) const;
};

}  // namespace dstream::edge
