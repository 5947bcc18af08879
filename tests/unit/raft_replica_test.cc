// One group's Raft replica (src/replication/raft_replica.h) as a single
// node runs it: one voter, a disk the test controls, no peers. What the
// server relies on: a proposal commits only once its entry is durable; the
// term is written before anything depends on it; a failed write refuses
// exactly the proposals it lost and the log goes on; a restart from what
// was durable continues the log where it was; a sole voter keeps no entry it
// has applied.
#include "replication/raft_replica.h"

#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <gtest/gtest.h>

namespace dstream::replication {
namespace {

struct written_record {
    std::uint64_t token = 0;
    enum class kind { hard_state, entry, snapshot } what = kind::entry;
    std::uint64_t index = 0;
    std::uint64_t term = 0;  // a snapshot's: the hard state's, not the snapshot's
    std::uint64_t vote = 0;
    log_entry entry;
};

class test_disk final : public raft_storage {
public:
    void write_hard_state(std::uint64_t token, std::uint64_t term, std::uint64_t vote) override {
        records.push_back({token, written_record::kind::hard_state, 0, term, vote, {}});
    }
    void write_entry(std::uint64_t token, std::uint64_t index, const log_entry& entry) override {
        records.push_back({token, written_record::kind::entry, index, entry.term, 0, entry});
    }
    void write_snapshot(std::uint64_t token, const snapshot_record& record,
                        std::string_view) override {
        records.push_back({token,
                           written_record::kind::snapshot,
                           record.meta.index,
                           record.term,
                           record.vote,
                           {}});
    }
    std::optional<std::string> snapshot_image(std::uint64_t) override { return image; }

    std::uint64_t last_token() const { return records.empty() ? 0 : records.back().token; }
    std::vector<written_record> records;
    std::optional<std::string> image;  // the snapshot's, once one is taken
};

class no_network final : public raft_transport {
public:
    void send(std::uint64_t, std::string_view) override { ++sent; }
    int sent = 0;
};

class applier final : public raft_events {
public:
    void committed(std::uint64_t index, std::uint64_t term, const log_entry& entry) override {
        applied.push_back({index, term, std::string(entry.bytes.view())});
    }
    void applied_through(std::uint64_t index) override { through = index; }
    void leadership_changed(const log::leadership& now) override { leadership.push_back(now); }
    void lost(std::uint64_t from_index) override { lost_from.push_back(from_index); }
    void install(const snapshot_meta&, std::string_view) override { ++installs; }

    struct applied_entry {
        std::uint64_t index, term;
        std::string bytes;
    };
    std::vector<applied_entry> applied;
    std::uint64_t through = 0;
    std::vector<log::leadership> leadership;
    std::vector<std::uint64_t> lost_from;
    int installs = 0;
};

class SoleVoter : public ::testing::Test {
protected:
    SoleVoter() { replica.start(now, {}); }

    std::uint64_t propose(const std::string& bytes) {
        const log::proposal p = replica.propose(now, bytes);
        EXPECT_EQ(p.what, log::proposal::outcome::accepted);
        return p.index;
    }
    // The disk says everything written so far is durable.
    void durable() { replica.written(now, disk.last_token()); }

    std::uint64_t now = 1000;
    test_disk disk;
    no_network network;
    applier events;
    raft_replica replica{raft_options{}, disk, network, events};
};

TEST_F(SoleVoter, BootstrapsAsLeaderOfTermOneWithItsConfigurationWritten) {
    ASSERT_FALSE(events.leadership.empty());
    EXPECT_TRUE(events.leadership.back().leads());
    EXPECT_EQ(events.leadership.back().term, 1u);
    EXPECT_EQ(events.leadership.back().leader, 1u);
    // Term 1 and the configuration at index 1, in that order.
    ASSERT_GE(disk.records.size(), 2u);
    EXPECT_EQ(disk.records[0].what, written_record::kind::hard_state);
    EXPECT_EQ(disk.records[0].term, 1u);
    EXPECT_EQ(disk.records[1].what, written_record::kind::entry);
    EXPECT_EQ(disk.records[1].index, 1u);
    EXPECT_EQ(disk.records[1].entry.kind, entry_kind::configuration);
}

TEST_F(SoleVoter, AProposalCommitsOnlyOnceItsEntryIsDurable) {
    durable();
    const std::uint64_t index = propose("one");
    EXPECT_EQ(index, 2u);
    EXPECT_TRUE(events.applied.empty()) << "applied before its entry was durable";
    ASSERT_EQ(disk.records.back().index, 2u);
    EXPECT_EQ(disk.records.back().entry.bytes.view(), "one");
    durable();
    ASSERT_EQ(events.applied.size(), 1u);
    EXPECT_EQ(events.applied[0].index, 2u);
    EXPECT_EQ(events.applied[0].term, 1u);
    EXPECT_EQ(events.applied[0].bytes, "one");
    EXPECT_EQ(events.through, 2u);
    EXPECT_EQ(replica.commit_index(), 2u);
}

TEST_F(SoleVoter, ABatchOfProposalsCommitsWithOneReportInOrder) {
    durable();
    for (int i = 0; i < 50; ++i) propose("e" + std::to_string(i));
    EXPECT_TRUE(events.applied.empty());
    durable();
    ASSERT_EQ(events.applied.size(), 50u);
    for (std::size_t i = 0; i < 50; ++i) {
        EXPECT_EQ(events.applied[i].index, i + 2);
        EXPECT_EQ(events.applied[i].bytes, "e" + std::to_string(i));
    }
}

TEST_F(SoleVoter, KeepsNoEntryItApplied) {
    durable();
    for (int i = 0; i < 100; ++i) propose(std::string(1000, 'x'));
    EXPECT_EQ(replica.entries_kept(), 100u);
    EXPECT_GE(replica.bytes_kept(), 100'000u);
    durable();
    EXPECT_EQ(replica.entries_kept(), 0u);
    EXPECT_EQ(replica.bytes_kept(), 0u);
}

TEST_F(SoleVoter, AFailedWriteRefusesTheProposalsItLostAndTheLogGoesOn) {
    durable();
    propose("kept");
    durable();
    const std::uint64_t before = disk.last_token();
    const std::uint64_t lost = propose("lost-1");
    propose("lost-2");
    // The write of "lost-1" (and every later one) did not persist.
    replica.write_failed(now, before + 1);
    ASSERT_EQ(events.lost_from.size(), 1u);
    EXPECT_EQ(events.lost_from[0], lost);
    EXPECT_TRUE(replica.leadership().leads());
    // The index of the lost entries is taken again.
    const std::uint64_t next = propose("after");
    EXPECT_EQ(next, lost);
    durable();
    ASSERT_EQ(events.applied.size(), 2u);
    EXPECT_EQ(events.applied[0].bytes, "kept");
    EXPECT_EQ(events.applied[1].bytes, "after");
    EXPECT_EQ(events.applied[1].index, lost);
}

TEST_F(SoleVoter, AFailureReportOfAWriteAlreadyGivenUpIsIgnored) {
    durable();
    propose("lost-1");
    const std::uint64_t first_batch = disk.last_token();
    propose("lost-2");
    const std::uint64_t second_batch = disk.last_token();
    replica.write_failed(now, first_batch);
    ASSERT_EQ(events.lost_from.size(), 1u);
    const std::size_t writes = disk.records.size();
    // The WAL reports the failure of every batch after the first too: the
    // restart gave that write up already.
    replica.write_failed(now, second_batch);
    EXPECT_EQ(events.lost_from.size(), 1u);
    EXPECT_EQ(disk.records.size(), writes) << "no second restart";
    propose("ok");
    durable();
    ASSERT_EQ(events.applied.size(), 1u);
    EXPECT_EQ(events.applied[0].bytes, "ok");
}

// A sole voter restarted from what its disk held: its state stands for a
// snapshot at `applied`, and `entries` follow it.
class SoleVoterRestart : public ::testing::Test {
protected:
    void start(std::uint64_t term, std::uint64_t applied, std::vector<log_entry> entries = {}) {
        durable_state state;
        state.term = term;
        state.snapshot = snapshot_meta{applied, term, 1, {1}};
        state.first_index = applied + 1;
        state.entries = std::move(entries);
        replica.start(5, std::move(state));
    }

    test_disk disk;
    no_network network;
    applier events;
    raft_replica replica{raft_options{}, disk, network, events};
};

TEST_F(SoleVoterRestart, StartsFromWhatWasAppliedAndContinuesTheLog) {
    start(3, 41);
    ASSERT_TRUE(replica.leadership().leads());
    EXPECT_EQ(replica.leadership().term, 3u);
    EXPECT_EQ(replica.applied_index(), 41u);
    const log::proposal p = replica.propose(5, "next");
    ASSERT_EQ(p.what, log::proposal::outcome::accepted);
    EXPECT_EQ(p.index, 42u);
    EXPECT_EQ(p.term, 3u);
    replica.written(5, disk.last_token());
    ASSERT_EQ(events.applied.size(), 1u);
    EXPECT_EQ(events.applied[0].index, 42u);
}

TEST_F(SoleVoterRestart, CommitsAndAppliesTheDurableEntriesItStartsWith) {
    start(1, 5, {log_entry{1, entry_kind::command, byte_slice::owning("six")},
                 log_entry{1, entry_kind::command, byte_slice::owning("seven")}});
    ASSERT_EQ(events.applied.size(), 2u);
    EXPECT_EQ(events.applied[0].bytes, "six");
    EXPECT_EQ(events.applied[1].index, 7u);
}

TEST(RaftReplicaPeers, MessagesWaitForTheHardStateBeforeThem) {
    // A voter among three that times out campaigns: its RequestVote carries
    // the new term, which must be durable before the message leaves.
    test_disk disk;
    no_network network;
    applier events;
    raft_options options;
    options.voters = {1, 2, 3};
    options.pre_vote = false;
    raft_replica replica(options, disk, network, events);
    replica.start(0, {});
    replica.written(0, disk.last_token());
    replica.tick(replica.next_timeout());
    ASSERT_EQ(replica.leadership().what, log::role::candidate);
    EXPECT_EQ(network.sent, 0) << "a vote request left before its term was durable";
    replica.written(replica.next_timeout(), disk.last_token());
    EXPECT_EQ(network.sent, 2);
}

TEST(RaftReplicaPeers, AProposalOnAFollowerIsRefusedAsNotLeader) {
    test_disk disk;
    no_network network;
    applier events;
    raft_options options;
    options.voters = {1, 2, 3};
    raft_replica replica(options, disk, network, events);
    replica.start(0, {});
    const log::proposal p = replica.propose(0, "x");
    EXPECT_EQ(p.what, log::proposal::outcome::not_leader);
    EXPECT_TRUE(disk.records.size() == 2u) << "nothing of the refused proposal is written";
}

// Three replicas whose messages the test delivers and whose disks report
// durable when the test says.
class ThreeReplicas : public ::testing::Test {
protected:
    struct mailbox final : raft_transport {
        void send(std::uint64_t to, std::string_view bytes) override {
            queued.emplace_back(to, std::string(bytes));
        }
        std::vector<std::pair<std::uint64_t, std::string>> queued;
    };
    struct node {
        test_disk disk;
        mailbox out;
        applier events;
        std::unique_ptr<raft_replica> replica;
    };

    ThreeReplicas() {
        raft_options options;
        options.voters = {1, 2, 3};
        options.pre_vote = false;
        options.trailing = 1;
        for (std::uint64_t id = 1; id <= 3; ++id) {
            auto& n = nodes[id - 1];
            options.node = id;
            options.seed = id;
            n.replica = std::make_unique<raft_replica>(options, n.disk, n.out, n.events);
            n.replica->start(now, {});
            durable(id);
        }
    }
    raft_replica& replica(std::uint64_t id) { return *nodes[id - 1].replica; }
    void durable(std::uint64_t id) {
        auto& n = nodes[id - 1];
        n.replica->written(now, n.disk.last_token());
    }
    // Delivers every queued message, and the answers they bring, but those
    // to `cut_off`.
    void deliver(std::uint64_t cut_off = 0) {
        for (bool moved = true; moved;) {
            moved = false;
            for (auto& from : nodes) {
                auto queued = std::exchange(from.out.queued, {});
                for (auto& [to, bytes] : queued) {
                    if (to == cut_off) continue;
                    moved = true;
                    replica(to).receive(now, bytes);
                }
            }
        }
    }
    // Node 1 wins an election with every disk prompt.
    void elect_node_one() {
        now = replica(1).next_timeout();
        replica(1).tick(now);
        for (int round = 0; round < 4; ++round) {
            for (std::uint64_t id = 1; id <= 3; ++id) durable(id);
            deliver();
        }
        ASSERT_TRUE(replica(1).leadership().leads());
    }

    std::uint64_t now = 1000;
    node nodes[3];
};

TEST_F(ThreeReplicas, AFollowerAppliesACommittedEntryOnlyOnceItIsDurableOnItsOwnDisk) {
    // A checkpoint is taken of what was applied, and recovery reads the
    // log's records after it: an applied entry not yet durable here would
    // let a conflicting suffix this follower cut off come back.
    elect_node_one();
    const log::proposal p = replica(1).propose(now, "x");
    ASSERT_EQ(p.what, log::proposal::outcome::accepted);
    durable(1);
    deliver();  // node 2's write of "x" stays in flight
    durable(3);
    deliver();
    ASSERT_GE(replica(1).commit_index(), p.index) << "the leader and node 3 are a majority";
    now = replica(1).next_timeout();
    replica(1).tick(now);  // a heartbeat tells node 2 the commit index
    deliver();
    EXPECT_GE(replica(2).commit_index(), p.index);
    for (const auto& a : nodes[1].events.applied) {
        EXPECT_NE(a.bytes, "x") << "applied before its entry was durable on this replica";
    }
    durable(2);
    ASSERT_FALSE(nodes[1].events.applied.empty());
    EXPECT_EQ(nodes[1].events.applied.back().bytes, "x");
    EXPECT_EQ(nodes[1].events.applied.back().index, p.index);
}

TEST_F(ThreeReplicas, ALeadersSnapshotIsWrittenWithTheHardStateItsCheckpointReplaces) {
    // The snapshot's checkpoint replaces the one that kept the hard state
    // of the log segments already let go: with the snapshot's own term and
    // no vote, a restart would forget this term's vote, and vote again.
    elect_node_one();
    const std::uint64_t term = replica(3).term();
    ASSERT_EQ(replica(3).vote(), 1u);
    std::uint64_t last = 0;
    for (int i = 0; i < 4; ++i) {
        last = replica(1).propose(now, "entry " + std::to_string(i)).index;
        for (int round = 0; round < 2; ++round) {
            durable(1);
            durable(2);
            deliver(3);
        }
    }
    ASSERT_GE(replica(1).applied_index(), last);
    nodes[0].disk.image = "the leader's image";
    replica(1).snapshot_taken(now, last, term);
    now = replica(1).next_timeout();
    replica(1).tick(now);
    deliver();
    const auto& written = nodes[2].disk.records.back();
    ASSERT_EQ(written.what, written_record::kind::snapshot);
    EXPECT_EQ(written.index, last);
    EXPECT_EQ(written.term, term);
    EXPECT_EQ(written.vote, 1u) << "the vote node 3 cast in this term";
}

}  // namespace
}  // namespace dstream::replication
