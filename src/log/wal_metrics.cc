#include "log/wal_metrics.h"

namespace dstream::log {

void wal_metrics::collect(metrics::exposition& out) const {
    out.histogram("dstream_wal_fsync_duration_seconds",
                  "Time of one fdatasync of the write-ahead log (one per group commit)",
                  fsync_us.read(), 1e6);
    out.histogram("dstream_wal_batch_records", "Records made durable by one fdatasync",
                  batch_records.read());
    out.histogram("dstream_wal_batch_bytes",
                  "Bytes (record headers and payloads) made durable by one fdatasync",
                  batch_bytes.read());
    out.counter("dstream_wal_write_errors_total",
                "Group commits that failed; their writes were refused with 503 WAL_DISK_PRESSURE",
                write_errors.value());
    out.gauge("dstream_wal_bytes", "Bytes of write-ahead log segments on disk",
              static_cast<double>(bytes_on_disk.value()));
    out.gauge("dstream_wal_segments", "Write-ahead log segment files on disk",
              static_cast<double>(segments.value()));
}

}  // namespace dstream::log
