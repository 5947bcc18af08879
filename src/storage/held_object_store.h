#pragma once
// An object store whose objects can be held: a removal of a held object
// waits until the last hold on it is released, and runs then. A backup holds
// the cold objects its images reference from the moment it captures them
// until it has copied them, so that the garbage of the writes that go on
// meanwhile (retention, deletes, a replaced snapshot) cannot take an object
// from under the copy. Any thread.
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "storage/object_store.h"

namespace dstream::storage {

class held_object_store final : public object_store {
public:
    explicit held_object_store(object_store& inner) : _inner(inner) {}

    // Holds `keys` until the handle is dropped; a removal deferred meanwhile
    // runs on the thread that drops it. The store must outlive the handle.
    std::shared_ptr<void> hold(const std::vector<std::string>& keys);
    // Objects held now (for tests and the metrics of a backup).
    std::size_t held() const;

    status put(const std::string& key, std::string_view bytes) override {
        return _inner.put(key, bytes);
    }
    result<std::unique_ptr<object_writer>> open_writer(const std::string& key) override {
        return _inner.open_writer(key);
    }
    status get(const std::string& key, std::uint64_t offset, std::uint64_t length,
               std::string& out) override {
        return _inner.get(key, offset, length, out);
    }
    std::shared_ptr<const object_file> open_file(const std::string& key) override {
        return _inner.open_file(key);
    }
    bool streams_ranges() const override { return _inner.streams_ranges(); }
    status stream_range(const std::string& key, std::uint64_t offset, std::uint64_t length,
                        range_sink& sink) override {
        return _inner.stream_range(key, offset, length, sink);
    }
    result<std::optional<std::uint64_t>> size(const std::string& key) override {
        return _inner.size(key);
    }
    // Deferred (and answered as done) while the object is held.
    status remove(const std::string& key) override;
    result<std::vector<object_entry>> list(const std::string& prefix) override {
        return _inner.list(prefix);
    }

private:
    void release(const std::vector<std::string>& keys);

    object_store& _inner;
    mutable std::mutex _mutex;
    std::unordered_map<std::string, std::size_t> _holds;  // key -> holds on it
    std::unordered_set<std::string> _deferred;            // held keys removed meanwhile
};

}  // namespace dstream::storage
