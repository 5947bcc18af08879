#include "cli/node_metrics.h"

#include "base/version.h"

namespace dstream::cli {

void node_metrics::collect(metrics::exposition& out) const {
    out.family("dstream_build_info", metrics::metric_type::gauge,
               "Always 1; the version of the running binary is its label");
    out.sample("dstream_build_info", {{"version", version()}}, 1.0);
    out.gauge("dstream_recovery_duration_seconds",
              "Time the last start took to load checkpoints and replay the WAL (0 in --memory)",
              static_cast<double>(recovery_us.value()) / 1e6);
    out.gauge("dstream_recovery_checkpoints_loaded", "Group checkpoints loaded by the last start",
              static_cast<double>(checkpoints_loaded.value()));
    out.gauge("dstream_recovery_records_replayed",
              "WAL records replayed by the last start (those after the checkpoints)",
              static_cast<double>(records_replayed.value()));
    out.gauge("dstream_recovery_bytes_replayed", "WAL bytes read by the last start",
              static_cast<double>(bytes_replayed.value()));
}

}  // namespace dstream::cli
