#pragma once
// What the groups report, summed over the node: writes applied, streams and
// hot bytes held, checkpoints. Counted in service::group as commands become
// durable, never inside group_state::apply (which stays pure).
#include "metrics/counter.h"
#include "metrics/gauge.h"
#include "metrics/registry.h"

namespace dstream::service {

struct service_metrics : metrics::registered<service_metrics> {
    metrics::counter appends;
    metrics::counter appended_bytes;
    metrics::gauge streams;
    metrics::gauge hot_bytes;
    metrics::counter checkpoints_written;
    metrics::counter checkpoint_errors;
    // SSE readers dropped from their stream's updates for being too far
    // behind (they go on by reading for themselves).
    metrics::counter live_readers_behind;
    // The cold store's outages as the groups see them.
    metrics::counter cold_flush_failures;
    metrics::counter cold_backpressure_refusals;
    metrics::gauge groups_cold_failing;

    void collect(metrics::exposition& out) const;
};

}  // namespace dstream::service
