#include "storage/metered_object_store.h"

#include "metrics/stopwatch.h"

namespace dstream::storage {
namespace {

// Runs `call` and records its outcome and duration under `op`.
template <typename Call>
auto metered(storage_metrics& m, object_op op, Call&& call) {
    const metrics::stopwatch took;
    auto outcome = call();
    auto& counters = m.of(op);
    counters.duration_us.observe(took.elapsed_us());
    (outcome ? counters.ok : counters.failed).inc();
    return outcome;
}

}  // namespace

status metered_object_store::put(const std::string& key, std::string_view bytes) {
    return metered(_metrics, object_op::put, [&] { return _inner.put(key, bytes); });
}

status metered_object_store::get(const std::string& key, std::uint64_t offset, std::uint64_t length,
                                 std::string& out) {
    return metered(_metrics, object_op::get, [&] { return _inner.get(key, offset, length, out); });
}

std::shared_ptr<const object_file> metered_object_store::open_file(const std::string& key) {
    return metered(_metrics, object_op::get, [&] { return _inner.open_file(key); });
}

status metered_object_store::stream_range(const std::string& key, std::uint64_t offset,
                                          std::uint64_t length, range_sink& sink) {
    return metered(_metrics, object_op::stream_range,
                   [&] { return _inner.stream_range(key, offset, length, sink); });
}

status metered_object_store::remove(const std::string& key) {
    return metered(_metrics, object_op::remove, [&] { return _inner.remove(key); });
}

result<std::unique_ptr<object_writer>> metered_object_store::open_writer(const std::string& key) {
    return metered(_metrics, object_op::open_writer, [&] { return _inner.open_writer(key); });
}

result<std::optional<std::uint64_t>> metered_object_store::size(const std::string& key) {
    return metered(_metrics, object_op::size, [&] { return _inner.size(key); });
}

result<std::vector<object_entry>> metered_object_store::list(const std::string& prefix) {
    return metered(_metrics, object_op::list, [&] { return _inner.list(prefix); });
}

}  // namespace dstream::storage
