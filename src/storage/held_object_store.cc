#include "storage/held_object_store.h"

namespace dstream::storage {

std::shared_ptr<void> held_object_store::hold(const std::vector<std::string>& keys) {
    {
        std::lock_guard lock(_mutex);
        for (const auto& key : keys) ++_holds[key];
    }
    // A shared_ptr<void> whose deleter releases the keys: the caller holds
    // nothing of this class's type.
    return std::shared_ptr<void>(new std::vector<std::string>(keys), [this](void* p) {
        std::unique_ptr<std::vector<std::string>> held(static_cast<std::vector<std::string>*>(p));
        release(*held);
    });
}

std::size_t held_object_store::held() const {
    std::lock_guard lock(_mutex);
    return _holds.size();
}

status held_object_store::remove(const std::string& key) {
    {
        std::lock_guard lock(_mutex);
        if (_holds.contains(key)) {
            _deferred.insert(key);
            return ok_status();
        }
    }
    return _inner.remove(key);
}

void held_object_store::release(const std::vector<std::string>& keys) {
    std::vector<std::string> due;
    {
        std::lock_guard lock(_mutex);
        for (const auto& key : keys) {
            auto it = _holds.find(key);
            if (it == _holds.end() || --it->second > 0) continue;
            _holds.erase(it);
            if (_deferred.erase(key) > 0) due.push_back(key);
        }
    }
    // A removal that fails leaves an orphan, as any failed removal does: the
    // start-up sweep takes it.
    for (const auto& key : due) (void)_inner.remove(key);
}

}  // namespace dstream::storage
