#include "service/orphan_sweep.h"

#include "service/cold_tier.h"

namespace dstream::service {

result<orphan_sweep_counts> sweep_orphan_objects(storage::object_store& store,
                                                 const std::unordered_set<std::string>& referenced,
                                                 std::chrono::milliseconds grace,
                                                 std::int64_t now_ms) {
    orphan_sweep_counts counts;
    for (const auto prefix : {chunk_key_prefix, snapshot_key_prefix}) {
        auto objects = store.list(std::string(prefix));
        if (!objects) return objects.err();
        counts.listed += objects->size();
        for (const auto& object : *objects) {
            if (referenced.contains(object.key)) continue;
            const bool old_enough =
                object.modified_ms > 0 && now_ms - object.modified_ms >= grace.count();
            if (!old_enough) {
                ++counts.kept_young;
            } else if (store.remove(object.key)) {
                ++counts.removed;
            }
        }
    }
    return counts;
}

}  // namespace dstream::service
