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

// Counts the bytes a writer takes, under open_writer.
class metered_writer final : public object_writer {
public:
    metered_writer(std::unique_ptr<object_writer> inner, metrics::counter& bytes)
        : _inner(std::move(inner)), _bytes(bytes) {}

    status write(std::string_view bytes) override {
        auto written = _inner->write(bytes);
        if (written) _bytes.inc(bytes.size());
        return written;
    }
    status finish() override { return _inner->finish(); }

private:
    std::unique_ptr<object_writer> _inner;
    metrics::counter& _bytes;
};

// Counts the bytes a streamed read hands on, whether or not it ends well:
// they were read.
class metered_sink final : public range_sink {
public:
    metered_sink(range_sink& inner, metrics::counter& bytes) : _inner(inner), _bytes(bytes) {}

    bool write(std::string_view bytes) override {
        _bytes.inc(bytes.size());
        return _inner.write(bytes);
    }

private:
    range_sink& _inner;
    metrics::counter& _bytes;
};

}  // namespace

status metered_object_store::put(const std::string& key, std::string_view bytes) {
    auto stored = metered(_metrics, object_op::put, [&] { return _inner.put(key, bytes); });
    if (stored) _metrics.of(object_op::put).bytes.inc(bytes.size());
    return stored;
}

status metered_object_store::get(const std::string& key, std::uint64_t offset, std::uint64_t length,
                                 std::string& out) {
    auto got =
        metered(_metrics, object_op::get, [&] { return _inner.get(key, offset, length, out); });
    if (got) _metrics.of(object_op::get).bytes.inc(out.size());
    return got;
}

std::shared_ptr<const object_file> metered_object_store::open_file(const std::string& key) {
    return metered(_metrics, object_op::get, [&] { return _inner.open_file(key); });
}

status metered_object_store::stream_range(const std::string& key, std::uint64_t offset,
                                          std::uint64_t length, range_sink& sink) {
    metered_sink counted(sink, _metrics.of(object_op::stream_range).bytes);
    return metered(_metrics, object_op::stream_range,
                   [&] { return _inner.stream_range(key, offset, length, counted); });
}

status metered_object_store::remove(const std::string& key) {
    return metered(_metrics, object_op::remove, [&] { return _inner.remove(key); });
}

result<std::unique_ptr<object_writer>> metered_object_store::open_writer(const std::string& key) {
    auto opened =
        metered(_metrics, object_op::open_writer, [&] { return _inner.open_writer(key); });
    if (!opened) return opened;
    return std::unique_ptr<object_writer>(std::make_unique<metered_writer>(
        std::move(*opened), _metrics.of(object_op::open_writer).bytes));
}

result<std::optional<std::uint64_t>> metered_object_store::size(const std::string& key) {
    return metered(_metrics, object_op::size, [&] { return _inner.size(key); });
}

result<std::vector<object_entry>> metered_object_store::list(const std::string& prefix) {
    return metered(_metrics, object_op::list, [&] { return _inner.list(prefix); });
}

}  // namespace dstream::storage
