#pragma once
// A group's disk on a durable node: its Raft records in the node's WAL
// (group commit with every other group), its snapshots in the checkpoint
// files. Writes go to the WAL from the group's strand; their outcomes come
// back from a WAL thread and are reported on the strand.
#include <cstdint>
#include <optional>

#include <boost/asio/any_io_executor.hpp>

#include "log/checkpoint_files.h"
#include "log/node_wal.h"
#include "replication/group_disk.h"

namespace dstream::replication {

class wal_group_disk final : public group_disk, private log::wal_sink {
public:
    // `last_index`: the group's last entry index recovery found.
    wal_group_disk(log::node_wal& wal, log::checkpoint_files& checkpoints, std::uint32_t group,
                   boost::asio::any_io_executor strand, std::uint64_t last_index);

    void on_report(reporter report) override { _report = std::move(report); }
    void write_hard_state(std::uint64_t token, std::uint64_t term, std::uint64_t vote) override;
    void write_entry(std::uint64_t token, std::uint64_t index, const log_entry& entry) override;
    void write_snapshot(std::uint64_t token, const snapshot_record& record,
                        std::string_view image) override;
    std::optional<std::string> snapshot_image(std::uint64_t index) override;
    status save_snapshot(const snapshot_record& record,
                         const state::checkpoint_image& image) override;

private:
    void on_written(std::uint64_t token, const status& st) override;
    // On the strand: the outcome of the writes up to `token`, the checkpoint
    // of a leader's snapshot written first once its record is durable.
    void report(std::uint64_t token, status st);

    // A leader's snapshot whose record is on its way to the WAL.
    struct pending_install {
        std::uint64_t token = 0;
        snapshot_record record;
        state::checkpoint_image image;
    };

    log::node_wal& _wal;
    log::checkpoint_files& _checkpoints;
    std::uint32_t _group;
    boost::asio::any_io_executor _strand;
    bool _wake_posted = false;  // a WAL wake is queued on the strand
    std::uint64_t _last_index;
    std::optional<pending_install> _install;
    reporter _report;
};

}  // namespace dstream::replication
