#pragma once
// A group's replicated log in the server: a raft_replica driven on the
// group's strand, with one timer for its timeouts, its disk (group_disk:
// the node's WAL, or memory) and a transport to its peers. It implements the
// seam the group sees (log/group_log.h).
#include <cstdint>
#include <memory>
#include <optional>
#include <string_view>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "log/group_log.h"
#include "replication/group_disk.h"
#include "replication/raft_metrics.h"
#include "replication/raft_replica.h"
#include "replication/snapshot_courier.h"
#include "runtime/clock.h"

namespace dstream::replication {

// A transport for a node that has no peers (every group has one voter):
// nothing is ever sent.
class no_peers final : public raft_transport {
public:
    void send(std::uint64_t to, std::string_view bytes) override;
};

class raft_group_log final : public log::group_log, private raft_events {
public:
    struct setup {
        std::uint32_t group = 0;
        raft_options raft;
        durable_state recovered;
        boost::asio::any_io_executor strand;  // the group's
        boost::asio::any_io_executor io;      // blocking snapshot writes
        const runtime::clock* clock = nullptr;
        // In a cluster: snapshots to and from peers go by way of this store.
        std::optional<snapshot_store> snapshots;
    };
    raft_group_log(setup s, std::unique_ptr<group_disk> disk, raft_transport& transport);
    ~raft_group_log() override;

    // log::group_log
    void attach(log::log_listener& listener) override { _listener = &listener; }
    void start() override;
    log::proposal propose(std::string bytes) override;
    void confirm_leadership(confirmed_handler done) override;
    void catch_up(confirmed_handler done) override;
    void tell_leader(std::string note) override;
    void forward(std::string bytes, forwarded_handler done) override;
    void save_snapshot(std::uint64_t index, std::uint64_t term, state::checkpoint_image image,
                       saved_handler done) override;
    log::leadership current() const override { return _replica.leadership(); }
    void stop() override;

    // A message of this group from a peer; on the strand.
    void receive(std::string_view message);
    // The same in memory the core keeps for the entries it carries.
    void receive(received_message message);
    // On the strand: when this node leads, hands the leadership to the most
    // up-to-date other voter (a graceful stop); false when it does not lead.
    bool hand_over();

private:
    // raft_events
    void committed(std::uint64_t index, std::uint64_t term, const log_entry& entry) override;
    void applied_through(std::uint64_t index) override;
    void leadership_changed(const log::leadership& now) override;
    void lost(std::uint64_t from_index) override;
    void install(const snapshot_meta& meta, std::string_view image) override;

    // A follower's read index (read_index.h): asked of the leader, answered
    // once this replica applied the index the leader granted.
    struct catching_up {
        std::uint64_t id = 0;
        std::uint64_t deadline = 0;  // ms; refused when no grant came by then
        std::optional<std::uint64_t> granted;
        confirmed_handler done;
    };
    void receive_read_index(std::string_view message);
    // The leader's side: a follower's request, answered after a confirmation round.
    void answer_read_index(std::uint64_t follower, std::uint64_t id);
    // Completes the catch-ups applied far enough (and, with `expired`, those
    // past their deadline).
    void settle_catch_ups(bool expired);
    // A follower's proposal made by the leader (forwarded_proposal.h).
    struct forwarding {
        std::uint64_t id = 0;
        std::uint64_t deadline = 0;  // ms; OUTCOME_UNKNOWN when no answer came by then
        forwarded_handler done;
    };
    void receive_forwarded(std::string_view message);
    // Those past their deadline (all of them once stopped) end OUTCOME_UNKNOWN.
    void expire_forwards();
    // One timer bounds the waits for the leader's answers: catch-ups and forwards.
    void arm_answer_timer();
    // A peer's message for the replica itself.
    void step(std::string_view message);
    // A peer's message for this log rather than its replica (a read index,
    // a forwarded proposal, a note to the leader, a snapshot the courier
    // fetches first): handled, true.
    bool take_aside(std::string_view message);

    std::uint64_t now() const { return _clock.monotonic_ms(); }
    // After every call into the replica: the timer, the metrics.
    void settle();
    void arm_timer();

    std::uint32_t _group;
    boost::asio::any_io_executor _strand;
    boost::asio::any_io_executor _io;
    const runtime::clock& _clock;
    std::unique_ptr<group_disk> _disk;
    std::unique_ptr<snapshot_courier> _courier;  // before the replica, which sends through it
    raft_replica _replica;
    durable_state _recovered;
    log::log_listener* _listener = nullptr;
    boost::asio::steady_timer _timer;
    std::uint64_t _armed_for = 0;  // the timeout the timer waits for; 0: none
    bool _stopped = false;
    raft_metrics::group_slot& _metrics;
    // Reads waiting for a leadership proof. The barrier in flight commits
    // after each of them asked, so it proves the leadership for all of them.
    std::vector<confirmed_handler> _confirming;
    std::uint64_t _barrier = 0;  // in flight; 0: none
    raft_transport& _transport;
    std::uint64_t _max_uncommitted_entries;
    std::uint64_t _max_log_bytes_kept;
    unsigned _catch_up_ms;  // how long a follower waits for the leader's grant
    std::vector<catching_up> _catching_up;
    std::vector<forwarding> _forwarding;
    std::uint64_t _next_request = 1;  // ids of catch-ups and forwards
    boost::asio::steady_timer _answer_timer;
    bool _answer_timer_armed = false;
};

}  // namespace dstream::replication
