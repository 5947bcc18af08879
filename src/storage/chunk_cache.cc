#include "storage/chunk_cache.h"

#include "storage/storage_metrics.h"

namespace dstream::storage {

chunk_cache::chunk_cache(std::uint64_t capacity_bytes)
    : _metrics(storage_metrics::get()), _capacity(capacity_bytes) {}

// Under the lock, so the gauge follows the size in order.
void chunk_cache::set_size(std::uint64_t size) {
    _size = size;
    _metrics.cache_bytes.set(static_cast<std::int64_t>(size));
}

std::shared_ptr<const std::string> chunk_cache::get(const std::string& key) {
    std::lock_guard lock(_mutex);
    auto it = _entries.find(key);
    if (it == _entries.end()) {
        _metrics.cache_misses.inc();
        return nullptr;
    }
    _metrics.cache_hits.inc();
    _lru.splice(_lru.begin(), _lru, it->second.position);
    return it->second.bytes;
}

void chunk_cache::put(const std::string& key, std::shared_ptr<const std::string> bytes) {
    std::lock_guard lock(_mutex);
    if (bytes->size() > _capacity || _entries.contains(key)) return;
    std::uint64_t size = _size + bytes->size();
    _lru.push_front(key);
    _entries.emplace(key, entry{std::move(bytes), _lru.begin()});
    while (size > _capacity && !_lru.empty()) {
        auto victim = _entries.find(_lru.back());
        size -= victim->second.bytes->size();
        _entries.erase(victim);
        _lru.pop_back();
    }
    set_size(size);
}

void chunk_cache::erase(const std::string& key) {
    std::lock_guard lock(_mutex);
    auto it = _entries.find(key);
    if (it == _entries.end()) return;
    set_size(_size - it->second.bytes->size());
    _lru.erase(it->second.position);
    _entries.erase(it);
}

}  // namespace dstream::storage
