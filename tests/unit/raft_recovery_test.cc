// What a group's Raft log finds on disk at start (src/replication/recovery.h)
// and the WAL payloads it reads (raft_records.h): a sole voter applies its
// durable log as it is read and starts from what it applied; a voter among
// several keeps its entries, a later entry at an index replacing the suffix;
// the commands of segments written before the log was a Raft log are a sole
// voter's of term 1.
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

#include "replication/raft_records.h"
#include "replication/recovery.h"

namespace dstream::replication {
namespace {

struct applied_command {
    std::uint64_t index, term;
    std::string bytes;
    bool operator==(const applied_command&) const = default;
};

class RaftRecovery : public ::testing::Test {
protected:
    void read(group_recovery& g, std::uint64_t index, const std::string& payload,
              log::wal_payloads kind = log::wal_payloads::raft_records) {
        g.record(index, payload, kind, [&](std::uint64_t i, std::uint64_t t, std::string_view b) {
            applied.push_back({i, t, std::string(b)});
        });
    }
    static std::string entry(std::uint64_t term, const std::string& bytes,
                             entry_kind kind = entry_kind::command) {
        return encode_entry_record(log_entry{term, kind, byte_slice::owning(bytes)}).joined();
    }
    // A voter among three whose newest checkpoint is at `index` of `term`.
    static group_recovery checkpointed_at(std::uint64_t index, std::uint64_t term,
                                          std::uint64_t hard_term, std::uint64_t vote) {
        group_recovery g(0, {1, 2, 3});
        g.checkpoint(index,
                     snapshot_header{snapshot_meta{index, term, 1, {1, 2, 3}}, hard_term, vote});
        return g;
    }
    // The snapshot's index and the entries' bytes a recovery ends with.
    using recovered_log = std::pair<std::uint64_t, std::vector<std::string>>;
    static recovered_log log_of(const durable_state& s) {
        std::vector<std::string> bytes;
        for (const auto& e : s.entries) bytes.emplace_back(e.bytes.view());
        return {s.snapshot ? s.snapshot->index : 0, bytes};
    }
    std::vector<applied_command> applied;
};

TEST(RaftRecords, EveryRecordDecodesToWhatWasEncoded) {
    const std::string record =
        encode_entry_record({7, entry_kind::command, byte_slice::owning("bytes")}).joined();
    const auto e = decode_raft_record(record);
    ASSERT_TRUE(e);
    EXPECT_EQ(e->kind, raft_record_kind::command);
    EXPECT_EQ(e->term, 7u);
    EXPECT_EQ(e->bytes, "bytes");
    const auto h = decode_raft_record(encode_hard_state_record(9, 2));
    ASSERT_TRUE(h);
    EXPECT_EQ(h->kind, raft_record_kind::hard_state);
    EXPECT_EQ(h->term, 9u);
    EXPECT_EQ(h->vote, 2u);
    const auto s = decode_raft_record(encode_snapshot_installed_record(4));
    ASSERT_TRUE(s);
    EXPECT_EQ(s->kind, raft_record_kind::snapshot_installed);
    EXPECT_FALSE(decode_raft_record(""));
    EXPECT_FALSE(decode_raft_record(encode_hard_state_record(1, 1) + "x"));
    const auto header =
        decode_snapshot_header(encode_snapshot_header(snapshot_meta{10, 3, 1, {1, 2, 3}}, 4, 2));
    ASSERT_TRUE(header);
    EXPECT_EQ(header->meta.index, 10u);
    EXPECT_EQ(header->meta.voters, (std::vector<std::uint64_t>{1, 2, 3}));
    EXPECT_EQ(header->term, 4u);
    EXPECT_EQ(header->vote, 2u);
}

TEST_F(RaftRecovery, NothingOnDiskIsANewGroup) {
    group_recovery g(0, {1});
    EXPECT_EQ(g.finish().term, 0u);
}

TEST_F(RaftRecovery, ASoleVoterAppliesItsCommandsAsReadAndStartsFromThem) {
    group_recovery g(0, {1});
    read(g, 2, encode_hard_state_record(1, 0));
    read(g, 1, entry(1, "conf", entry_kind::configuration));
    read(g, 2, entry(1, "a"));
    read(g, 3, entry(1, "b"));
    read(g, 4, entry(1, "", entry_kind::barrier));
    EXPECT_EQ(applied, (std::vector<applied_command>{{2, 1, "a"}, {3, 1, "b"}}));
    EXPECT_EQ(g.last_index(), 4u);
    const durable_state s = g.finish();
    EXPECT_EQ(s.term, 1u);
    ASSERT_TRUE(s.snapshot);
    EXPECT_EQ(s.snapshot->index, 4u);
    EXPECT_EQ(s.first_index, 5u);
    EXPECT_TRUE(s.entries.empty()) << "a sole voter holds nothing in memory";
}

TEST_F(RaftRecovery, ASoleVoterSkipsWhatItsCheckpointHolds) {
    group_recovery g(0, {1});
    snapshot_header header{snapshot_meta{3, 2, 1, {1}}, 2, 1};
    g.checkpoint(3, header);
    read(g, 3, entry(2, "in the checkpoint"));
    read(g, 4, entry(2, "after"));
    EXPECT_EQ(applied, (std::vector<applied_command>{{4, 2, "after"}}));
    const durable_state s = g.finish();
    EXPECT_EQ(s.term, 2u);
    EXPECT_EQ(s.vote, 1u);
    EXPECT_EQ(s.snapshot->index, 4u);
    EXPECT_EQ(s.snapshot->term, 2u);
}

TEST_F(RaftRecovery, ASoleVoterLogThatSkipsAnIndexStopsTheStart) {
    group_recovery g(0, {1});
    read(g, 1, entry(1, "conf", entry_kind::configuration));
    EXPECT_THROW(read(g, 3, entry(1, "a gap")), std::runtime_error);
}

TEST_F(RaftRecovery, CommandsOfTheLogBeforeRaftAreTermOne) {
    group_recovery g(0, {1});
    g.checkpoint(2, std::nullopt);  // a checkpoint written before headers
    read(g, 2, "old-2", log::wal_payloads::commands);
    read(g, 3, "old-3", log::wal_payloads::commands);
    // That log's indexes may skip: a batch that failed was cut back.
    read(g, 6, "old-6", log::wal_payloads::commands);
    EXPECT_EQ(applied, (std::vector<applied_command>{{3, 1, "old-3"}, {6, 1, "old-6"}}));
    // The Raft log goes on after it.
    read(g, 7, entry(1, "new-7"));
    const durable_state s = g.finish();
    EXPECT_EQ(s.term, 1u);
    EXPECT_EQ(s.snapshot->index, 7u);
    EXPECT_EQ(s.snapshot->term, 1u);
}

TEST_F(RaftRecovery, AVoterAmongSeveralKeepsItsEntriesAndALaterOneReplacesTheSuffix) {
    group_recovery g(0, {1, 2, 3});
    read(g, 1, entry(1, "conf", entry_kind::configuration));
    read(g, 2, entry(1, "a"));
    read(g, 3, entry(1, "b (term 1)"));
    read(g, 4, entry(1, "c (term 1)"));
    read(g, 5, encode_hard_state_record(2, 3));
    read(g, 3, entry(2, "b (term 2)"));
    EXPECT_TRUE(applied.empty()) << "nothing applies before a majority says it is committed";
    const durable_state s = g.finish();
    EXPECT_EQ(s.term, 2u);
    EXPECT_EQ(s.vote, 3u);
    EXPECT_FALSE(s.snapshot);
    EXPECT_EQ(s.first_index, 1u);
    ASSERT_EQ(s.entries.size(), 3u);
    EXPECT_EQ(s.entries[2].bytes.view(), "b (term 2)");
    EXPECT_EQ(s.entries[2].term, 2u);
}

TEST_F(RaftRecovery, AnInstalledSnapshotVoidsTheLogBeforeIt) {
    // Recovery loads the newest checkpoint first: the leader's snapshot.
    group_recovery g = checkpointed_at(10, 3, 3, 0);
    read(g, 1, entry(1, "conf", entry_kind::configuration));
    read(g, 2, entry(1, "old"));
    // Entries of an old history past the snapshot, then the install.
    read(g, 11, entry(1, "old 11"));
    read(g, 12, entry(1, "old 12"));
    read(g, 10, encode_snapshot_installed_record(3));
    read(g, 11, entry(3, "new"));
    const durable_state s = g.finish();
    EXPECT_EQ(log_of(s), (recovered_log{10, {"new"}}));
    EXPECT_EQ(s.first_index, 11u);
}

TEST_F(RaftRecovery, AnEntryTheCheckpointHoldsWrittenAfterLaterOnesCutsThemOff) {
    // A leader of term 3 wrote 9..11; as a follower in term 4 it replaced 9
    // and 10 and checkpointed at 10. Its old 11 is not of the log that the
    // checkpoint ends: after term 4's 10 it would break log matching.
    group_recovery g = checkpointed_at(10, 4, 4, 2);
    read(g, 9, entry(3, "9 (term 3)"));
    read(g, 10, entry(3, "10 (term 3)"));
    read(g, 11, entry(3, "11 (term 3)"));
    read(g, 12, encode_hard_state_record(4, 2));
    read(g, 9, entry(4, "9 (term 4)"));
    read(g, 10, entry(4, "10 (term 4)"));
    const durable_state s = g.finish();
    EXPECT_EQ(log_of(s), (recovered_log{10, {}}));
    EXPECT_EQ(s.first_index, 11u);
    // Entries written after the cut stay.
    group_recovery later = checkpointed_at(10, 4, 4, 2);
    read(later, 11, entry(3, "11 (term 3)"));
    read(later, 10, entry(4, "10 (term 4)"));
    read(later, 11, entry(4, "11 (term 4)"));
    EXPECT_EQ(log_of(later.finish()), (recovered_log{10, {"11 (term 4)"}}));
}

TEST_F(RaftRecovery, AnInstallWhoseCheckpointWasNeverWrittenDidNotHappen) {
    // The record goes first, the checkpoint once the record is durable: a
    // crash between the two leaves the log as it was, and what the replica
    // wrote after a failed checkpoint follows it.
    group_recovery g = checkpointed_at(5, 1, 2, 0);
    read(g, 6, entry(1, "6"));
    read(g, 10, encode_snapshot_installed_record(3));
    read(g, 7, entry(2, "7"));
    EXPECT_EQ(log_of(g.finish()), (recovered_log{5, {"6", "7"}}));
}

}  // namespace
}  // namespace dstream::replication
