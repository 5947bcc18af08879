#include "replication/wal_group_disk.h"

#include <utility>

#include <boost/asio/post.hpp>

#include "replication/raft_records.h"
#include "storage/hot_bytes.h"

namespace dstream::replication {

wal_group_disk::wal_group_disk(log::node_wal& wal, log::checkpoint_files& checkpoints,
                               std::uint32_t group, boost::asio::any_io_executor strand,
                               std::uint64_t last_index)
    : _wal(wal),
      _checkpoints(checkpoints),
      _group(group),
      _strand(std::move(strand)),
      _last_index(last_index) {}

void wal_group_disk::write_hard_state(std::uint64_t token, std::uint64_t term, std::uint64_t vote) {
    // Indexed past the last entry: the WAL keeps the segment holding it until
    // a checkpoint past that index, which holds a hard state as new.
    _wal.submit(_group, _last_index + 1, encode_hard_state_record(term, vote), this, token);
}

void wal_group_disk::write_entry(std::uint64_t token, std::uint64_t index, const log_entry& entry) {
    _last_index = index;
    _wal.submit_quietly(_group, index, encode_entry_record(entry), this, token);
    // The wake goes behind what this thread has queued: the appends of its
    // other connections and groups join the same WAL batch.
    if (std::exchange(_wake_posted, true)) return;
    boost::asio::post(_strand, [this] {
        _wake_posted = false;
        _wal.wake();
    });
}

void wal_group_disk::write_snapshot(std::uint64_t token, const snapshot_record& record,
                                    std::string_view image) {
    // The record that says the log before it is the snapshot's goes first,
    // durably, and the checkpoint after it: entries the WAL holds after the
    // record are the snapshot's log. A crash or a failed write between the
    // two leaves a record without its checkpoint, which recovery ignores:
    // the install did not happen, and the older checkpoint and the log
    // before the record stand. The checkpoint first would let a crash leave
    // it without the record, and the log it replaced would follow it.
    const std::string_view body = image.size() >= 4 ? image.substr(0, image.size() - 4) : image;
    auto owned = std::make_shared<std::string>(body);
    pending_install install{token, record, {}};
    install.image.pieces.push_back(byte_slice{owned, owned->data(), owned->size()});
    _install = std::move(install);
    _last_index = record.meta.index;
    _wal.submit(_group, record.meta.index, encode_snapshot_installed_record(record.meta.term), this,
                token);
}

std::optional<std::string> wal_group_disk::snapshot_image(std::uint64_t index) {
    const auto newest = _checkpoints.newest();
    const auto it = newest.find(_group);
    if (it == newest.end() || it->second.index != index) return std::nullopt;
    auto loaded = _checkpoints.load(it->second);
    if (!loaded) return std::nullopt;
    return std::move(loaded->image);
}

status wal_group_disk::save_snapshot(const snapshot_record& record,
                                     const state::checkpoint_image& image) {
    const status written = _checkpoints.write(
        _group, record.meta.index, encode_snapshot_header(record.meta, record.term, record.vote),
        image);
    // Dropping the covered log deletes whole WAL segments, about 10 ms per
    // 32 MiB file on ext4: here, on the I/O pool, not on a strand.
    if (written) _wal.release(_group, record.meta.index);
    return written;
}

void wal_group_disk::on_written(std::uint64_t token, const status& st) {
    boost::asio::post(_strand, [this, token, st] { report(token, st); });
}

void wal_group_disk::report(std::uint64_t token, status st) {
    if (_install && _install->token <= token) {
        // On the strand: a leader's snapshot is rare.
        if (st) {
            const pending_install& install = *_install;
            st = _checkpoints.write(_group, install.record.meta.index,
                                    encode_snapshot_header(install.record.meta, install.record.term,
                                                           install.record.vote),
                                    install.image);
        }
        _install.reset();
    }
    if (_report) _report(token, st);
}

}  // namespace dstream::replication
