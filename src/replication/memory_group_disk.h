#pragma once
// A group's "disk" with --memory: every write counts as durable at once (it
// is reported on the group's strand, never from inside the write), and
// nothing survives the process.
#include <cstdint>
#include <mutex>
#include <string>

#include <boost/asio/any_io_executor.hpp>

#include "replication/group_disk.h"

namespace dstream::replication {

class memory_group_disk final : public group_disk {
public:
    explicit memory_group_disk(boost::asio::any_io_executor strand) : _strand(std::move(strand)) {}

    void on_report(reporter report) override { _report = std::move(report); }
    void write_hard_state(std::uint64_t token, std::uint64_t, std::uint64_t) override {
        written(token);
    }
    void write_entry(std::uint64_t token, std::uint64_t, const log_entry&) override {
        written(token);
    }
    void write_snapshot(std::uint64_t token, const snapshot_record& record,
                        std::string_view image) override;
    std::optional<std::string> snapshot_image(std::uint64_t index) override;
    status save_snapshot(const snapshot_record& record,
                         const state::checkpoint_image& image) override;

private:
    // One report covers every write made before it runs, like a group commit.
    void written(std::uint64_t token);

    boost::asio::any_io_executor _strand;
    reporter _report;
    std::uint64_t _newest = 0;
    bool _posted = false;
    // The newest snapshot, for a follower that needs it; saved from the I/O pool.
    std::mutex _snapshot_mutex;
    std::uint64_t _snapshot_index = 0;
    std::string _snapshot_image;
};

}  // namespace dstream::replication
