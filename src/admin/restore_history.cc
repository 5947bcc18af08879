#include "admin/restore_history.h"

#include <string>

#include "protocol/digest.h"

namespace dstream::admin {

std::uint64_t restore_history_id(std::string_view backup_id, std::uint32_t group) {
    protocol::hasher h;
    h.update("dstream restore history\n");
    h.update(backup_id);
    h.update("\n" + std::to_string(group));
    const protocol::body_digest d = h.finish();
    std::uint64_t id = 0;
    for (int i = 7; i >= 0; --i) id = (id << 8) | d[static_cast<std::size_t>(i)];
    return id == 0 ? 1 : id;
}

}  // namespace dstream::admin
