#pragma once
// A bounded LRU cache of cold chunk objects, shared by every group of the
// node; used from the I/O pool's threads.
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>

namespace dstream::storage {

struct storage_metrics;

class chunk_cache {
public:
    explicit chunk_cache(std::uint64_t capacity_bytes);

    std::shared_ptr<const std::string> get(const std::string& key);
    void put(const std::string& key, std::shared_ptr<const std::string> bytes);
    void erase(const std::string& key);

private:
    using lru_list = std::list<std::string>;
    struct entry {
        std::shared_ptr<const std::string> bytes;
        lru_list::iterator position;
    };

    void set_size(std::uint64_t size);

    storage_metrics& _metrics;
    std::mutex _mutex;
    std::uint64_t _capacity;
    std::uint64_t _size = 0;
    lru_list _lru;  // most recent first
    std::unordered_map<std::string, entry> _entries;
};

}  // namespace dstream::storage
