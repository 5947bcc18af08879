#include "service/service_metrics.h"

namespace dstream::service {

void service_metrics::collect(metrics::exposition& out) const {
    out.counter("dstream_appends_total",
                "Appends applied as new writes (producer repeats and refusals excluded)",
                appends.value());
    out.counter("dstream_appended_bytes_total", "Stream bytes added by those appends",
                appended_bytes.value());
    out.gauge("dstream_streams", "Live streams on this node", static_cast<double>(streams.value()));
    out.gauge("dstream_hot_bytes",
              "Stream bytes held in memory above the cold frontier, all groups",
              static_cast<double>(hot_bytes.value()));
    out.counter("dstream_checkpoints_written_total", "Group checkpoints written",
                checkpoints_written.value());
    out.counter("dstream_checkpoint_errors_total", "Group checkpoints that failed to be written",
                checkpoint_errors.value());
    out.counter("dstream_live_readers_behind_total",
                "SSE readers dropped from their stream's updates for being too far behind",
                live_readers_behind.value());
    out.counter("dstream_cold_flush_failures_total",
                "Chunk flushes the cold store failed (the bytes stay in memory)",
                cold_flush_failures.value());
    out.counter("dstream_cold_backpressure_refusals_total",
                "Writes refused with 503 COLD_BACKPRESSURE: the cold store failed and the "
                "group held its hot budget",
                cold_backpressure_refusals.value());
    out.gauge("dstream_groups_cold_failing",
              "Groups whose last chunk flush failed (flushing backs off until one succeeds)",
              static_cast<double>(groups_cold_failing.value()));
}

}  // namespace dstream::service
