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

// The object_store calls.
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
    };
    std::array<op_metrics, object_op_count> object_ops;

    op_metrics& of(object_op op) { return object_ops[static_cast<std::size_t>(op)]; }
    void collect(metrics::exposition& out) const;
};

}  // namespace dstream::storage
