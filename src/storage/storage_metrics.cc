#include "storage/storage_metrics.h"

namespace dstream::storage {

std::string_view name(object_op op) {
    switch (op) {
        case object_op::put:
            return "put";
        case object_op::get:
            return "get";
        case object_op::remove:
            return "remove";
        case object_op::list:
            return "list";
        case object_op::open_writer:
            return "open_writer";
        case object_op::size:
            return "size";
        case object_op::stream_range:
            return "stream_range";
    }
    return "other";
}

void storage_metrics::per_op_counter(metrics::exposition& out, std::string_view family,
                                     std::string_view help,
                                     metrics::counter op_metrics::*count) const {
    out.family(family, metrics::metric_type::counter, help);
    for (std::size_t i = 0; i < object_op_count; ++i)
        out.sample(family, {{"op", name(static_cast<object_op>(i))}},
                   (object_ops[i].*count).value());
}

void storage_metrics::collect(metrics::exposition& out) const {
    using metrics::metric_type;
    out.counter("dstream_chunk_cache_hits_total", "Cold chunk reads served from the chunk cache",
                cache_hits.value());
    out.counter("dstream_chunk_cache_misses_total",
                "Cold chunk reads that loaded the chunk from the object store",
                cache_misses.value());
    out.gauge("dstream_chunk_cache_bytes", "Bytes of chunks held by the chunk cache",
              static_cast<double>(cache_bytes.value()));

    out.family("dstream_object_store_operations_total", metric_type::counter,
               "Object-store operations by operation and result");
    for (std::size_t i = 0; i < object_op_count; ++i) {
        const std::string_view op = name(static_cast<object_op>(i));
        out.sample("dstream_object_store_operations_total", {{"op", op}, {"result", "ok"}},
                   object_ops[i].ok.value());
        out.sample("dstream_object_store_operations_total", {{"op", op}, {"result", "error"}},
                   object_ops[i].failed.value());
    }
    per_op_counter(out, "dstream_object_store_bytes_total",
                   "Object bytes written and read by object-store operations, by operation",
                   &op_metrics::bytes);
    per_op_counter(out, "dstream_object_store_retries_total",
                   "Attempts of an object-store call after its first (S3 retries), by operation",
                   &op_metrics::retries);
    out.family("dstream_object_store_operation_duration_seconds", metric_type::histogram,
               "Time of one object-store operation, by operation");
    for (std::size_t i = 0; i < object_op_count; ++i) {
        out.buckets("dstream_object_store_operation_duration_seconds",
                    {{"op", name(static_cast<object_op>(i))}}, object_ops[i].duration_us.read(),
                    1e6);
    }
}

}  // namespace dstream::storage
