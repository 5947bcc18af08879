#pragma once
// What the storage tier reports: chunk cache effectiveness and object-store
// operations (a local directory or S3: the same names).
#include <array>
#include <cstddef>
#include <string_view>

#include "metrics/counter.h"
#include "metrics/gauge.h"
#include "metrics/histogram.h"
#include "metrics/registry.h"

namespace dstream::storage {

// The object_store calls; a writer's bytes and its S3 calls count under open_writer.
enum class object_op { put, get, remove, list, open_writer, size, stream_range };
inline constexpr std::size_t object_op_count = 7;
std::string_view name(object_op op);

struct storage_metrics : metrics::registered<storage_metrics> {
    metrics::counter cache_hits;
    metrics::counter cache_misses;
    metrics::gauge cache_bytes;

    struct op_metrics {
        metrics::counter ok;
        metrics::counter failed;
        metrics::histogram<metrics::bounds::latency_us> duration_us;
        // Object bytes moved: written by put and writers, read by get and
        // stream_range (a file sent with sendfile is counted by the edge).
        metrics::counter bytes;
        // Attempts after the first (only S3 retries, inside one call).
        metrics::counter retries;
    };
    std::array<op_metrics, object_op_count> object_ops;

    op_metrics& of(object_op op) { return object_ops[static_cast<std::size_t>(op)]; }
    void collect(metrics::exposition& out) const;

private:
    // A counter family with one sample per operation.
    void per_op_counter(metrics::exposition& out, std::string_view family, std::string_view help,
                        metrics::counter op_metrics::*count) const;
};

}  // namespace dstream::storage
