// A group's disk on a durable node (src/replication/wal_group_disk.h) taking
// a leader's snapshot: the WAL record that says the log before it is the
// snapshot's is durable before the checkpoint is written, and the
// checkpoint keeps the hard state of the replica, not the snapshot's term.
// A crash between the two leaves the record without its checkpoint, which
// recovery ignores; the checkpoint first would let the replaced log follow it.
#include "replication/wal_group_disk.h"

#include <chrono>
#include <string>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <gtest/gtest.h>

#include "page_cache.h"
#include "replication/raft_records.h"
#include "temp_dir.h"

namespace dstream::replication {
namespace {

TEST(WalGroupDisk, ALeadersSnapshotIsCheckpointedOnlyOnceItsRecordIsDurable) {
    test::temp_dir dir{"dstream-wal-group-disk"};
    log::node_wal wal(log::wal_options{dir.path() / "wal"});
    wal.recover([](std::uint32_t, std::uint64_t, std::string_view, log::wal_payloads) {});
    wal.start();
    log::checkpoint_files checkpoints(dir.path() / "checkpoints");
    boost::asio::io_context io;
    wal_group_disk disk(wal, checkpoints, 0, boost::asio::make_strand(io), 4);
    std::vector<std::pair<std::uint64_t, bool>> reports;
    disk.on_report(
        [&](std::uint64_t token, const status& st) { reports.emplace_back(token, st.ok()); });

    disk.write_snapshot(7, snapshot_record{snapshot_meta{10, 3, 1, {1, 2, 3}}, 5, 2},
                        std::string("the image") + "crc.");
    EXPECT_TRUE(checkpoints.newest().empty()) << "checkpointed before its record was durable";
    // The report comes from a WAL thread: the context waits for it.
    auto waiting = boost::asio::make_work_guard(io);
    for (int i = 0; i < 500 && reports.empty(); ++i) io.run_for(std::chrono::milliseconds(10));
    ASSERT_EQ(reports, (std::vector<std::pair<std::uint64_t, bool>>{{7, true}}));

    const auto newest = checkpoints.newest();
    ASSERT_EQ(newest.count(0), 1u);
    EXPECT_EQ(newest.at(0).index, 10u);
    if (test::shows_dropped_pages(dir.path())) {
        EXPECT_EQ(test::cached_pages(newest.at(0).path), 0u)
            << "a checkpoint is read again only by a restart: its pages leave the cache";
    }
    const auto loaded = checkpoints.load(newest.at(0));
    ASSERT_TRUE(loaded);
    const auto header = decode_snapshot_header(loaded->header);
    ASSERT_TRUE(header);
    EXPECT_EQ(header->meta.term, 3u);
    EXPECT_EQ(header->term, 5u) << "the replica's term, which a restart must not forget";
    EXPECT_EQ(header->vote, 2u);
    wal.stop();

    log::node_wal reread(log::wal_options{dir.path() / "wal"});
    std::vector<raft_record_kind> records;
    reread.recover(
        [&](std::uint32_t, std::uint64_t index, std::string_view payload, log::wal_payloads) {
            const auto decoded = decode_raft_record(payload);
            if (decoded && index == 10) records.push_back(decoded->kind);
        });
    EXPECT_EQ(records, std::vector<raft_record_kind>{raft_record_kind::snapshot_installed});
}

}  // namespace
}  // namespace dstream::replication
