#pragma once
// The start-up sweep of cold objects nothing references: a crash between
// writing an object and logging it (a chunk flush, a large snapshot), or
// between a delete and the removal of its objects, leaves one. Blocking; at
// start, on the thread that composes the node.
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <string>
#include <unordered_set>

#include "base/result.h"
#include "storage/object_store.h"

namespace dstream::service {

struct orphan_sweep_counts {
    std::size_t listed = 0;
    std::size_t removed = 0;
    // Orphans younger than the grace, or of no known age, kept for now.
    std::size_t kept_young = 0;
};

// Removes each object under chunks/ and snapshots/ of `store` that
// `referenced` does not name and that was written `grace` or longer before
// `now_ms` (wall ms). The grace spares an object whose command is still on
// its way to the log, which no referenced set can name yet. Staged parts are
// not looked at: the part sweep judges them by their staging time. Fails
// when a listing fails (nothing more is removed then).
result<orphan_sweep_counts> sweep_orphan_objects(storage::object_store& store,
                                                 const std::unordered_set<std::string>& referenced,
                                                 std::chrono::milliseconds grace,
                                                 std::int64_t now_ms);

}  // namespace dstream::service
