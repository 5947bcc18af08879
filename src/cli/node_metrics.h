#pragma once
// What the composition root reports about the node itself: its version and
// the cost of its last start (checkpoints loaded, WAL replayed).
#include "metrics/gauge.h"
#include "metrics/registry.h"

namespace dstream::cli {

struct node_metrics : metrics::registered<node_metrics> {
    metrics::gauge recovery_us;
    metrics::gauge checkpoints_loaded;
    metrics::gauge records_replayed;
    metrics::gauge bytes_replayed;

    void collect(metrics::exposition& out) const;
};

}  // namespace dstream::cli
