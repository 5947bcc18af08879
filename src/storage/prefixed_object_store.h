#pragma once
// One node's share of a store that several use (a bucket): its keys live
// under `prefix`, and a listing shows only those, with the prefix taken off.
// Whatever runs on top, the orphan sweep included, cannot name, and so cannot
// delete, another node's object (docs/disk-format.md, "Object keys").
#include <string>

#include "storage/object_store.h"

namespace dstream::storage {

class prefixed_object_store final : public object_store {
public:
    // `prefix` ends with '/', or is empty for the whole store.
    prefixed_object_store(object_store& inner, std::string prefix)
        : _inner(inner), _prefix(std::move(prefix)) {}

    status put(const std::string& key, std::string_view bytes) override;
    result<std::unique_ptr<object_writer>> open_writer(const std::string& key) override;
    status get(const std::string& key, std::uint64_t offset, std::uint64_t length,
               std::string& out) override;
    std::shared_ptr<const object_file> open_file(const std::string& key) override;
    bool streams_ranges() const override { return _inner.streams_ranges(); }
    status stream_range(const std::string& key, std::uint64_t offset, std::uint64_t length,
                        range_sink& sink) override;
    result<std::optional<std::uint64_t>> size(const std::string& key) override;
    status remove(const std::string& key) override;
    result<std::vector<object_entry>> list(const std::string& prefix) override;

private:
    object_store& _inner;
    std::string _prefix;
};

}  // namespace dstream::storage
