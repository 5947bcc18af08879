#include "replication/memory_group_disk.h"

#include <boost/asio/post.hpp>

namespace dstream::replication {

void memory_group_disk::written(std::uint64_t token) {
    _newest = token;
    if (_posted) return;
    _posted = true;
    boost::asio::post(_strand, [this] {
        _posted = false;
        if (_report) _report(_newest, ok_status());
    });
}

void memory_group_disk::write_snapshot(std::uint64_t token, const snapshot_record& record,
                                       std::string_view image) {
    {
        const std::lock_guard lock(_snapshot_mutex);
        _snapshot_index = record.meta.index;
        _snapshot_image.assign(image);
    }
    written(token);
}

std::optional<std::string> memory_group_disk::snapshot_image(std::uint64_t index) {
    const std::lock_guard lock(_snapshot_mutex);
    if (index != _snapshot_index || _snapshot_image.empty()) return std::nullopt;
    return _snapshot_image;
}

status memory_group_disk::save_snapshot(const snapshot_record& record,
                                        const state::checkpoint_image& image) {
    // Sealed as a checkpoint file, so the image restores alike.
    std::string bytes = state::sealed_checkpoint_bytes(image);
    const std::lock_guard lock(_snapshot_mutex);
    _snapshot_index = record.meta.index;
    _snapshot_image = std::move(bytes);
    return ok_status();
}

}  // namespace dstream::replication
