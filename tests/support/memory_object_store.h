#pragma once
// An object store in memory whose outage a test switches on and off (an S3
// endpoint that answers nothing but errors), and whose objects carry the
// write times a test sets: the double of the cold tier in the service and
// sweep tests. Any thread.
#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "storage/object_store.h"

namespace dstream::test {

class memory_object_store final : public storage::object_store {
public:
    // Every call fails until set_down(false), as an unreachable store's do.
    void set_down(bool down) { _down = down; }
    // Puts wait until set_stalled(false): a store whose calls are still
    // retrying, or slower than the writers.
    void set_stalled(bool stalled) {
        {
            std::lock_guard lock(_mutex);
            _stalled = stalled;
        }
        _unstalled.notify_all();
    }
    // The write time later puts record (ms since the Unix epoch).
    void set_now_ms(std::int64_t now_ms) { _now_ms = now_ms; }
    std::size_t failed_calls() const { return _failed; }
    // From now on ranges are streamed (as S3 does) in pieces of `piece_bytes`.
    void stream_in_pieces(std::size_t piece_bytes) { _piece_bytes = piece_bytes; }
    std::size_t gets() const { return _gets; }

    // For set-up and checks, down or not.
    void place(const std::string& key, std::string bytes, std::int64_t modified_ms) {
        std::lock_guard lock(_mutex);
        _objects[key] = stored{std::move(bytes), modified_ms};
    }
    bool holds(const std::string& key) const {
        std::lock_guard lock(_mutex);
        return _objects.contains(key);
    }
    std::size_t count_under(const std::string& prefix) const {
        std::lock_guard lock(_mutex);
        std::size_t n = 0;
        for (const auto& [key, object] : _objects) n += key.starts_with(prefix) ? 1 : 0;
        return n;
    }

    status put(const std::string& key, std::string_view bytes) override {
        {
            std::unique_lock lock(_mutex);
            _unstalled.wait(lock, [this] { return !_stalled; });
        }
        if (_down) return outage();
        place(key, std::string(bytes), _now_ms);
        return ok_status();
    }
    result<std::unique_ptr<storage::object_writer>> open_writer(const std::string& key) override {
        if (_down) return outage();
        return std::unique_ptr<storage::object_writer>(std::make_unique<writer>(*this, key));
    }
    status get(const std::string& key, std::uint64_t offset, std::uint64_t length,
               std::string& out) override {
        if (_down) return outage();
        ++_gets;
        std::lock_guard lock(_mutex);
        const auto it = _objects.find(key);
        if (it == _objects.end() || offset + length > it->second.bytes.size()) return missing();
        out.assign(it->second.bytes, offset, length);
        return ok_status();
    }
    bool streams_ranges() const override { return _piece_bytes != 0; }
    status stream_range(const std::string& key, std::uint64_t offset, std::uint64_t length,
                        storage::range_sink& sink) override {
        if (_down) return outage();
        std::string bytes;
        {
            std::lock_guard lock(_mutex);
            const auto it = _objects.find(key);
            if (it == _objects.end() || offset + length > it->second.bytes.size()) return missing();
            bytes = it->second.bytes.substr(offset, length);
        }
        for (std::size_t at = 0; at < bytes.size(); at += _piece_bytes) {
            if (!sink.write(std::string_view(bytes).substr(at, _piece_bytes))) break;
        }
        return ok_status();
    }
    result<std::optional<std::uint64_t>> size(const std::string& key) override {
        if (_down) return outage();
        std::lock_guard lock(_mutex);
        const auto it = _objects.find(key);
        if (it == _objects.end()) return std::optional<std::uint64_t>();
        return std::optional<std::uint64_t>(it->second.bytes.size());
    }
    status remove(const std::string& key) override {
        if (_down) return outage();
        std::lock_guard lock(_mutex);
        _objects.erase(key);
        return ok_status();
    }
    result<std::vector<storage::object_entry>> list(const std::string& prefix) override {
        if (_down) return outage();
        std::lock_guard lock(_mutex);
        std::vector<storage::object_entry> entries;
        for (const auto& [key, object] : _objects) {
            if (key.starts_with(prefix)) {
                entries.push_back({key, object.bytes.size(), object.modified_ms});
            }
        }
        return entries;
    }

private:
    struct stored {
        std::string bytes;
        std::int64_t modified_ms = 0;
    };
    class writer final : public storage::object_writer {
    public:
        writer(memory_object_store& store, std::string key) : _store(store), _key(std::move(key)) {}
        status write(std::string_view bytes) override {
            if (_store._down) return _store.outage();
            _bytes.append(bytes);
            return ok_status();
        }
        status finish() override { return _store.put(_key, _bytes); }

    private:
        memory_object_store& _store;
        std::string _key;
        std::string _bytes;
    };

    error outage() {
        ++_failed;
        return make_error(protocol::error_code::cold_store_failed, "the cold store is down");
    }
    static error missing() {
        return make_error(protocol::error_code::cold_store_failed, "no such object");
    }

    mutable std::mutex _mutex;
    std::condition_variable _unstalled;
    bool _stalled = false;  // under _mutex
    std::map<std::string, stored> _objects;
    std::atomic<bool> _down{false};
    std::atomic<std::int64_t> _now_ms{1};
    std::atomic<std::size_t> _failed{0};
    std::atomic<std::size_t> _piece_bytes{0};
    std::atomic<std::size_t> _gets{0};
};

}  // namespace dstream::test
