// Three replicas of one group in one process (replication::raft_group_log
// over memory disks and the in-process local_network), run on strands of one
// io_context with real timers: an election, replication to every replica in
// order, a leadership proof (a barrier) for a linearizable read on the
// leader and a refusal naming the leader on a follower, and a new leader
// once the old one is cut off, whose proof the old one can no longer give;
// a follower's read index, and a leader's bound on writes no majority took;
// a follower's proposal made by the leader for it (forward);
// a snapshot that reaches a lagging follower by way of an object store.
#include "replication/raft_group_log.h"

#include <chrono>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <atomic>
#include <filesystem>

#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/strand.hpp>
#include <gtest/gtest.h>

#include "replication/local_transport.h"
#include "replication/memory_group_disk.h"
#include "storage/local_dir_object_store.h"

namespace dstream::replication {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;

class recording_listener final : public log::log_listener {
public:
    void committed(const log::committed_entry& e) override {
        applied.emplace_back(e.bytes);
        last_index = e.index;
    }
    void committed_through(std::uint64_t) override {}
    void leadership_changed(const log::leadership& now) override { leadership = now; }
    void proposals_lost(std::uint64_t, const error&) override {}
    void install(std::uint64_t index, std::uint64_t, std::string_view image) override {
        installed.emplace_back(index, std::string(image));
    }

    std::vector<std::string> applied;
    std::vector<std::pair<std::uint64_t, std::string>> installed;
    std::uint64_t last_index = 0;
    log::leadership leadership;
};

struct replica {
    asio::any_io_executor strand;
    recording_listener listener;
    std::unique_ptr<raft_group_log> log;
};

class ThreeVoters : public ::testing::Test {
protected:
    // With `snapshots`, the replicas send snapshots by way of that store,
    // keep 4 entries before one and send one again after 300 ms.
    // An AppendEntries carries at most `message_entry_bytes` of entries.
    explicit ThreeVoters(storage::object_store* snapshots = nullptr,
                         std::size_t message_entry_bytes = raft_options{}.message_entry_bytes) {
        for (std::uint64_t node = 1; node <= 3; ++node) {
            auto r = std::make_unique<replica>();
            r->strand = asio::make_strand(io);
            raft_group_log::setup s;
            s.group = 7;
            s.raft.node = node;
            s.raft.voters = {1, 2, 3};
            s.raft.election_ms = 150;
            s.raft.heartbeat_ms = 30;
            s.raft.seed = node * 7919;
            s.raft.message_entry_bytes = message_entry_bytes;
            s.strand = r->strand;
            s.io = io.get_executor();
            if (snapshots != nullptr) {
                s.raft.trailing = 4;
                s.raft.install_snapshot_ms = 300;
                s.snapshots = snapshot_store{snapshots, "raft/g7/n" + std::to_string(node) + "/"};
            }
            r->log = std::make_unique<raft_group_log>(
                std::move(s), std::make_unique<memory_group_disk>(r->strand),
                network.transport(node, 7));
            r->log->attach(r->listener);
            network.attach(node, 7, *r->log, r->strand);
            replicas.push_back(std::move(r));
        }
        for (auto& r : replicas) asio::post(r->strand, [&r] { r->log->start(); });
    }
    ~ThreeVoters() override {
        for (auto& r : replicas) asio::post(r->strand, [&r] { r->log->stop(); });
        io.run_for(50ms);
    }

    template <typename Done>
    bool run_until(Done done, std::chrono::milliseconds limit = 10s) {
        const auto until = std::chrono::steady_clock::now() + limit;
        while (!done()) {
            if (std::chrono::steady_clock::now() > until) return false;
            io.run_for(5ms);
        }
        return true;
    }
    // The one replica every connected replica agrees leads, or nothing.
    replica* leader(const std::optional<std::uint64_t>& cut = std::nullopt) {
        replica* found = nullptr;
        for (std::size_t i = 0; i < replicas.size(); ++i) {
            if (cut && *cut == i + 1) continue;
            const log::leadership l = replicas[i]->listener.leadership;
            if (l.leads()) {
                if (found != nullptr) return nullptr;
                found = replicas[i].get();
            }
        }
        if (found == nullptr) return nullptr;
        for (std::size_t i = 0; i < replicas.size(); ++i) {
            if (cut && *cut == i + 1) continue;
            if (replicas[i]->listener.leadership.term != found->listener.leadership.term) {
                return nullptr;
            }
        }
        return found;
    }
    std::uint64_t node_of(const replica* r) const {
        for (std::size_t i = 0; i < replicas.size(); ++i) {
            if (replicas[i].get() == r) return i + 1;
        }
        return 0;
    }
    log::proposal propose(replica& r, std::string bytes) {
        std::optional<log::proposal> out;
        asio::post(r.strand, [&] { out = r.log->propose(std::move(bytes)); });
        EXPECT_TRUE(run_until([&] { return out.has_value(); }));
        return *out;
    }
    // The outcome of a leadership proof asked on `r`.
    std::pair<log::leadership, bool> confirm(replica& r) {
        std::optional<std::pair<log::leadership, bool>> out;
        asio::post(r.strand, [&] {
            r.log->confirm_leadership(
                [&](const log::leadership& who, bool confirmed) { out.emplace(who, confirmed); });
        });
        EXPECT_TRUE(run_until([&] { return out.has_value(); }));
        return out.value_or(std::make_pair(log::leadership{}, false));
    }

    replica* follower_of(const replica& l) {
        for (auto& r : replicas) {
            if (r.get() != &l) return r.get();
        }
        return nullptr;
    }
    // The outcome of a read index asked on `r` (catch_up), and how many
    // entries `r` had applied when it completed.
    std::pair<bool, std::size_t> catch_up(replica& r) {
        std::optional<std::pair<bool, std::size_t>> out;
        asio::post(r.strand, [&] {
            r.log->catch_up([&](const log::leadership&, bool confirmed) {
                out.emplace(confirmed, r.listener.applied.size());
            });
        });
        EXPECT_TRUE(run_until([&] { return out.has_value(); }));
        return out.value_or(std::make_pair(false, std::size_t{0}));
    }

    asio::io_context io;
    local_network network;
    std::vector<std::unique_ptr<replica>> replicas;
};

TEST_F(ThreeVoters, ElectOneLeaderAndReplicateToEveryReplicaInOrder) {
    ASSERT_TRUE(run_until([&] { return leader() != nullptr; }));
    replica& l = *leader();
    for (int i = 0; i < 20; ++i) {
        const log::proposal p = propose(l, "cmd-" + std::to_string(i));
        ASSERT_EQ(p.what, log::proposal::outcome::accepted);
    }
    ASSERT_TRUE(run_until([&] {
        for (auto& r : replicas) {
            if (r->listener.applied.size() < 20) return false;
        }
        return true;
    }));
    for (auto& r : replicas) {
        ASSERT_EQ(r->listener.applied.size(), 20u);
        for (int i = 0; i < 20; ++i) EXPECT_EQ(r->listener.applied[i], "cmd-" + std::to_string(i));
    }
}

TEST_F(ThreeVoters, TheLeaderProvesItsLeadershipAndAFollowerNamesTheLeader) {
    ASSERT_TRUE(run_until([&] { return leader() != nullptr; }));
    replica& l = *leader();
    const auto [who, confirmed] = confirm(l);
    EXPECT_TRUE(confirmed);
    EXPECT_TRUE(who.leads());
    for (auto& r : replicas) {
        if (r.get() == &l) continue;
        ASSERT_TRUE(run_until([&] { return r->listener.leadership.leader == node_of(&l); }));
        const auto [known, follower_confirmed] = confirm(*r);
        EXPECT_FALSE(follower_confirmed);
        EXPECT_EQ(known.leader, node_of(&l));
    }
    // A follower refuses a proposal, naming the leader.
    for (auto& r : replicas) {
        if (r.get() == &l) continue;
        const log::proposal p = propose(*r, "on a follower");
        EXPECT_EQ(p.what, log::proposal::outcome::not_leader);
        EXPECT_EQ(p.leader.leader, node_of(&l));
    }
}

TEST_F(ThreeVoters, ALeaderCutOffIsReplacedAndCanNoLongerProveItLeads) {
    ASSERT_TRUE(run_until([&] { return leader() != nullptr; }));
    replica& old = *leader();
    const std::uint64_t old_node = node_of(&old);
    const std::uint64_t old_term = old.listener.leadership.term;
    network.isolate(old_node);
    ASSERT_TRUE(run_until([&] {
        replica* now = leader(old_node);
        return now != nullptr && now != &old;
    }));
    replica& fresh = *leader(old_node);
    EXPECT_GT(fresh.listener.leadership.term, old_term);
    EXPECT_TRUE(confirm(fresh).second);
    // The old leader cannot get a majority for its barrier.
    EXPECT_FALSE(confirm(old).second);
    const log::proposal p = propose(fresh, "after the change");
    ASSERT_EQ(p.what, log::proposal::outcome::accepted);
    network.heal(old_node);
    ASSERT_TRUE(run_until([&] {
        return !old.listener.applied.empty() && old.listener.applied.back() == "after the change";
    }));
    EXPECT_FALSE(old.listener.leadership.leads());
}

TEST_F(ThreeVoters, AFollowerThatCaughtUpHasAppliedEverythingTheLeaderHadCommitted) {
    ASSERT_TRUE(run_until([&] { return leader() != nullptr; }));
    replica& l = *leader();
    replica* f = follower_of(l);
    ASSERT_TRUE(run_until([&] { return f->listener.leadership.leader == node_of(&l); }));
    for (int round = 0; round < 10; ++round) {
        // Committed on the leader (applied there), not yet told to the follower.
        std::optional<std::size_t> committed;
        asio::post(l.strand, [&] {
            for (int i = 0; i < 5; ++i) l.log->propose("r" + std::to_string(round) + "-" + std::to_string(i));
        });
        ASSERT_TRUE(run_until([&] { return l.listener.applied.size() >= std::size_t(5 * (round + 1)); }));
        committed = l.listener.applied.size();
        const auto [caught_up, applied] = catch_up(*f);
        EXPECT_TRUE(caught_up);
        EXPECT_GE(applied, *committed) << "round " << round;
    }
}

// libraft puts up to 32 entries in one AppendEntries whatever their length;
// on a network that drops long messages, as the peer network drops a frame
// past its bound, a follower behind by several long entries catches up only
// if such a batch goes as several messages.
class ThreeVotersOnANetworkOfShortMessages : public ThreeVoters {
protected:
    ThreeVotersOnANetworkOfShortMessages() : ThreeVoters(nullptr, 4096) {
        network.drop_longer_than(8192);
    }
};

TEST_F(ThreeVotersOnANetworkOfShortMessages, AFollowerBehindByManyLongEntriesCatchesUp) {
    ASSERT_TRUE(run_until([&] { return leader() != nullptr; }));
    replica& l = *leader();
    replica* f = follower_of(l);
    ASSERT_TRUE(run_until([&] { return f->listener.leadership.leader == node_of(&l); }));
    network.isolate(node_of(f));
    asio::post(l.strand, [&] {
        for (char c = 'a'; c < 'a' + 20; ++c) l.log->propose(std::string(3000, c));
    });
    ASSERT_TRUE(run_until([&] { return l.listener.applied.size() >= 20; }));
    network.heal(node_of(f));
    ASSERT_TRUE(run_until([&] { return f->listener.applied.size() >= l.listener.applied.size(); }))
        << "the follower applied " << f->listener.applied.size() << " of "
        << l.listener.applied.size() << "; messages dropped as too long: " << network.dropped_long();
    EXPECT_EQ(f->listener.applied, l.listener.applied);
}

TEST_F(ThreeVoters, AFollowerCutOffFromItsLeaderCannotCatchUp) {
    ASSERT_TRUE(run_until([&] { return leader() != nullptr; }));
    replica& l = *leader();
    replica* f = follower_of(l);
    ASSERT_TRUE(run_until([&] { return f->listener.leadership.leader == node_of(&l); }));
    network.isolate(node_of(f));
    EXPECT_FALSE(catch_up(*f).first);
}

TEST_F(ThreeVoters, ALeaderWithoutAMajorityRefusesProposalsPastItsUncommittedBound) {
    ASSERT_TRUE(run_until([&] { return leader() != nullptr; }));
    replica& l = *leader();
    for (auto& r : replicas) {
        if (r.get() != &l) network.isolate(node_of(r.get()));
    }
    const std::size_t bound = raft_options{}.max_uncommitted_entries;
    std::size_t accepted = 0, refused = 0;
    std::optional<error> refusal;
    bool done = false;
    asio::post(l.strand, [&] {
        for (std::size_t i = 0; i < bound + 10; ++i) {
            const log::proposal p = l.log->propose("w");
            if (p.what == log::proposal::outcome::accepted) ++accepted;
            if (p.what == log::proposal::outcome::refused) {
                ++refused;
                refusal = p.refusal;
            }
        }
        done = true;
    });
    ASSERT_TRUE(run_until([&] { return done; }));
    EXPECT_LE(accepted, bound);
    EXPECT_GE(refused, 10u);
    ASSERT_TRUE(refusal.has_value());
    EXPECT_EQ(refusal->code, protocol::error_code::raft_uncommitted_backpressure);
}


TEST_F(ThreeVoters, TheLeaderProposesAFollowersForwardedCommandWhoseEntryTheFollowerApplies) {
    ASSERT_TRUE(run_until([&] { return leader() != nullptr; }));
    replica& l = *leader();
    replica* f = follower_of(l);
    ASSERT_TRUE(run_until([&] { return f->listener.leadership.leader == node_of(&l); }));
    std::optional<log::proposal> answer;
    asio::post(f->strand, [&] {
        f->log->forward("forwarded", [&](log::proposal p) { answer = std::move(p); });
    });
    ASSERT_TRUE(run_until([&] { return answer.has_value(); }));
    ASSERT_EQ(answer->what, log::proposal::outcome::accepted);
    EXPECT_EQ(answer->term, l.listener.leadership.term);
    ASSERT_TRUE(run_until([&] { return f->listener.last_index >= answer->index; }));
    ASSERT_FALSE(f->listener.applied.empty());
    EXPECT_EQ(f->listener.applied.back(), "forwarded");
    ASSERT_TRUE(run_until([&] {
        return !l.listener.applied.empty() && l.listener.applied.back() == "forwarded";
    }));
}

TEST_F(ThreeVoters, AForwardedCommandNoLeaderAnswersEndsOutcomeUnknown) {
    ASSERT_TRUE(run_until([&] { return leader() != nullptr; }));
    replica& l = *leader();
    replica* f = follower_of(l);
    ASSERT_TRUE(run_until([&] { return f->listener.leadership.leader == node_of(&l); }));
    network.isolate(node_of(f));
    std::optional<log::proposal> answer;
    asio::post(f->strand, [&] {
        f->log->forward("lost", [&](log::proposal p) { answer = std::move(p); });
    });
    ASSERT_TRUE(run_until([&] { return answer.has_value(); }, 2s));
    ASSERT_EQ(answer->what, log::proposal::outcome::refused);
    ASSERT_TRUE(answer->refusal.has_value());
    EXPECT_EQ(answer->refusal->code, protocol::error_code::outcome_unknown);
}

// An object store whose reads return altered bytes while `alter` is set.
class altering_store final : public storage::object_store {
public:
    explicit altering_store(std::filesystem::path root) : _inner(std::move(root)) {}
    std::atomic<bool> alter{false};

    status put(const std::string& key, std::string_view bytes) override {
        return _inner.put(key, bytes);
    }
    result<std::unique_ptr<storage::object_writer>> open_writer(const std::string& key) override {
        return _inner.open_writer(key);
    }
    status get(const std::string& key, std::uint64_t offset, std::uint64_t length,
               std::string& out) override {
        status st = _inner.get(key, offset, length, out);
        if (st && alter && !out.empty()) out[out.size() / 2] ^= 0x20;
        return st;
    }
    result<std::optional<std::uint64_t>> size(const std::string& key) override {
        return _inner.size(key);
    }
    status remove(const std::string& key) override { return _inner.remove(key); }
    result<std::vector<storage::object_entry>> list(const std::string& prefix) override {
        return _inner.list(prefix);
    }

private:
    storage::local_dir_object_store _inner;
};

struct store_in_a_temp_dir {
    store_in_a_temp_dir()
        : dir(std::filesystem::temp_directory_path() /
              ("dstream-courier-" + std::to_string(::testing::UnitTest::GetInstance()->random_seed()) +
               "-" + std::to_string(reinterpret_cast<std::uintptr_t>(this)))),
          store(dir) {}
    ~store_in_a_temp_dir() { std::filesystem::remove_all(dir); }
    std::filesystem::path dir;
    altering_store store;
};

class ThreeVotersSharingAStore : private store_in_a_temp_dir, public ThreeVoters {
protected:
    ThreeVotersSharingAStore() : ThreeVoters(&(this->store_in_a_temp_dir::store)) {}
    altering_store& shared() { return store_in_a_temp_dir::store; }
};

TEST_F(ThreeVotersSharingAStore, ALaggingFollowerInstallsTheLeadersSnapshotFromTheStoreOnceItsBytesCheck) {
    auto& metrics = raft_metrics::get().of(7);
    const std::uint64_t sent_before = metrics.snapshots_sent.load();
    const std::uint64_t fetched_before = metrics.snapshots_fetched.load();
    const std::uint64_t failed_before = metrics.snapshot_failures.load();
    ASSERT_TRUE(run_until([&] { return leader() != nullptr; }));
    replica& l = *leader();
    replica* f = follower_of(l);
    ASSERT_TRUE(run_until([&] { return f->listener.leadership.leader == node_of(&l); }));
    network.isolate(node_of(f));
    for (int i = 0; i < 40; ++i) {
        ASSERT_EQ(propose(l, "cmd-" + std::to_string(i)).what, log::proposal::outcome::accepted);
    }
    ASSERT_TRUE(run_until([&] { return l.listener.applied.size() >= 40; }));
    // The leader's snapshot at its last applied entry; the log before it goes
    // (bar 4 entries), so the follower can catch up only from the snapshot.
    const std::string body(300 * 1024, 'x');
    auto owned = std::make_shared<std::string>(body);
    state::checkpoint_image image;
    image.pieces.push_back(byte_slice{owned, owned->data(), owned->size()});
    const std::string sealed = state::sealed_checkpoint_bytes(image);
    std::optional<bool> saved;
    asio::post(l.strand, [&] {
        l.log->save_snapshot(l.listener.last_index, l.listener.leadership.term, image,
                             [&](const status& st) { saved = bool(st); });
    });
    ASSERT_TRUE(run_until([&] { return saved.has_value(); }));
    ASSERT_TRUE(*saved);
    // One more entry commits the snapshot's index on the leader's core.
    ASSERT_EQ(propose(l, "after").what, log::proposal::outcome::accepted);
    ASSERT_TRUE(run_until([&] { return l.listener.applied.size() >= 41; }));

    // The follower's fetches see altered bytes: it refuses them and installs nothing.
    shared().alter = true;
    network.heal(node_of(f));
    ASSERT_TRUE(run_until([&] { return metrics.snapshot_failures.load() > failed_before; }));
    EXPECT_TRUE(f->listener.installed.empty());
    EXPECT_GT(metrics.snapshots_sent.load(), sent_before);
    const auto listed = shared().list("raft/g7/n" + std::to_string(node_of(&l)) + "/");
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].size, sealed.size());

    // Once the store answers true, the leader's next try installs the image.
    shared().alter = false;
    ASSERT_TRUE(run_until([&] { return !f->listener.installed.empty(); }));
    EXPECT_EQ(f->listener.installed.front().second, sealed);
    EXPECT_GT(metrics.snapshots_fetched.load(), fetched_before);
    ASSERT_TRUE(run_until([&] {
        return !f->listener.applied.empty() && f->listener.applied.back() == "after";
    }));
}

}  // namespace
}  // namespace dstream::replication
