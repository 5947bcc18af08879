#pragma once
// An object store that counts and times every operation of the store it
// wraps, and the bytes they move (storage_metrics), whichever store that is.
#include "storage/object_store.h"
#include "storage/storage_metrics.h"

namespace dstream::storage {

class metered_object_store final : public object_store {
public:
    explicit metered_object_store(object_store& inner)
        : _inner(inner), _metrics(storage_metrics::get()) {}

    status put(const std::string& key, std::string_view bytes) override;
    status get(const std::string& key, std::uint64_t offset, std::uint64_t length,
               std::string& out) override;
    // Counted as a get: it is how the object is read.
    std::shared_ptr<const object_file> open_file(const std::string& key) override;
    bool streams_ranges() const override { return _inner.streams_ranges(); }
    status stream_range(const std::string& key, std::uint64_t offset, std::uint64_t length,
                        range_sink& sink) override;
    result<std::unique_ptr<object_writer>> open_writer(const std::string& key) override;
    result<std::optional<std::uint64_t>> size(const std::string& key) override;
    status remove(const std::string& key) override;
    result<std::vector<object_entry>> list(const std::string& prefix) override;

private:
    object_store& _inner;
    storage_metrics& _metrics;
};

}  // namespace dstream::storage
