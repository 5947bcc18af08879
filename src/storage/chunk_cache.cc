#include "storage/chunk_cache.h"

namespace dstream::storage {

std::shared_ptr<const std::string> chunk_cache::get(const std::string& key) {
    std::lock_guard lock(_mutex);
    auto it = _entries.find(key);
    if (it == _entries.end()) return nullptr;
    _lru.splice(_lru.begin(), _lru, it->second.position);
    return it->second.bytes;
}

void chunk_cache::put(const std::string& key, std::shared_ptr<const std::string> bytes) {
    std::lock_guard lock(_mutex);
    if (bytes->size() > _capacity || _entries.contains(key)) return;
    _size += bytes->size();
    _lru.push_front(key);
    _entries.emplace(key, entry{std::move(bytes), _lru.begin()});
    while (_size > _capacity && !_lru.empty()) {
        auto victim = _entries.find(_lru.back());
        _size -= victim->second.bytes->size();
        _entries.erase(victim);
        _lru.pop_back();
    }
}

void chunk_cache::erase(const std::string& key) {
    std::lock_guard lock(_mutex);
    auto it = _entries.find(key);
    if (it == _entries.end()) return;
    _size -= it->second.bytes->size();
    _lru.erase(it->second.position);
    _entries.erase(it);
}

}  // namespace dstream::storage
