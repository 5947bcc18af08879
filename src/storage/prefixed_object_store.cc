#include "storage/prefixed_object_store.h"

namespace dstream::storage {

status prefixed_object_store::put(const std::string& key, std::string_view bytes) {
    return _inner.put(_prefix + key, bytes);
}

result<std::unique_ptr<object_writer>> prefixed_object_store::open_writer(const std::string& key) {
    return _inner.open_writer(_prefix + key);
}

status prefixed_object_store::get(const std::string& key, std::uint64_t offset,
                                  std::uint64_t length, std::string& out) {
    return _inner.get(_prefix + key, offset, length, out);
}

std::shared_ptr<const object_file> prefixed_object_store::open_file(const std::string& key) {
    return _inner.open_file(_prefix + key);
}

status prefixed_object_store::stream_range(const std::string& key, std::uint64_t offset,
                                           std::uint64_t length, range_sink& sink) {
    return _inner.stream_range(_prefix + key, offset, length, sink);
}

result<std::optional<std::uint64_t>> prefixed_object_store::size(const std::string& key) {
    return _inner.size(_prefix + key);
}

status prefixed_object_store::remove(const std::string& key) {
    return _inner.remove(_prefix + key);
}

result<std::vector<object_entry>> prefixed_object_store::list(const std::string& prefix) {
    auto listed = _inner.list(_prefix + prefix);
    if (!listed) return listed;
    std::vector<object_entry> own;
    own.reserve(listed->size());
    for (auto& entry : *listed) {
        // A store that lists more than asked must not hand over another's key.
        if (!entry.key.starts_with(_prefix)) continue;
        entry.key.erase(0, _prefix.size());
        own.push_back(std::move(entry));
    }
    return own;
}

}  // namespace dstream::storage
