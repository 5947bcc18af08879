#pragma once
// One group's Raft storage on a simulated node, as the server's
// wal_group_disk: records in the node's WAL, snapshots in its checkpoints.
// It also keeps the log_view the checks read, and reports every entry
// written to the checker (log matching).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>

#include "checker.h"
#include "log_view.h"
#include "node_disk.h"
#include "replication/raft_replica.h"
#include "state/group_state.h"

namespace dstream::sim {

class group_disk final : public replication::raft_storage {
public:
    // `last_index`: the group's last entry index recovery found.
    group_disk(node_disk& disk, checker& check, std::uint64_t node, std::uint32_t group,
               std::uint64_t last_index);

    void on_report(node_disk::reporter report);

    void write_hard_state(std::uint64_t token, std::uint64_t term, std::uint64_t vote) override;
    void write_entry(std::uint64_t token, std::uint64_t index,
                     const replication::log_entry& entry) override;
    void write_snapshot(std::uint64_t token, const replication::snapshot_record& record,
                        std::string_view image) override;
    std::optional<std::string> snapshot_image(std::uint64_t index) override;

    // The group's own checkpoint, written in the background; `done(false)`: failed.
    void save_snapshot(const replication::snapshot_meta& meta, std::uint64_t term,
                       std::uint64_t vote, const state::checkpoint_image& image,
                       std::function<void(bool)> done);

    log_view& view() { return _view; }
    // The replica restarted from what is durable, its log ending at `last`:
    // the log a snapshot being installed was to replace comes back if the
    // snapshot did not become durable.
    void restarted(std::uint64_t last);
    void installed() { _before_install.reset(); }
    // The token of the newest write.
    std::uint64_t last_token() const { return _last_token; }
    const log_view& view() const { return _view; }
    // The view of a log that starts from what recovery found.
    void start_view(const replication::durable_state& state);

private:
    // A leader's snapshot whose record is on its way to the WAL.
    struct pending_install {
        std::uint64_t token = 0;
        node_disk::checkpoint checkpoint;
    };
    // The outcome of the writes up to `token`.
    void reported(std::uint64_t token, bool ok);

    node_disk& _disk;
    checker& _check;
    std::uint64_t _node;
    std::uint32_t _group;
    std::uint64_t _last_index;
    node_disk::reporter _report;
    log_view _view;
    std::optional<log_view> _before_install;
    std::optional<pending_install> _install;
    std::uint64_t _last_token = 0;
};

}  // namespace dstream::sim
