#pragma once
// A group's replicated log on a simulated node: the sim's raft_group_log.
// The real raft_replica (on libraft's raft_step) with a virtual-time timer,
// the node's simulated disk and the simulated network; it implements the
// seam the group sees (log/group_log.h), as the server's does, and tells the
// checker what the replica decides.
#include <cstdint>
#include <memory>
#include <vector>

#include "checker.h"
#include "event_queue.h"
#include "group_disk.h"
#include "log/group_log.h"
#include "replication/raft_replica.h"
#include "trace.h"

namespace dstream::sim {

class sim_log final : public log::group_log, private replication::raft_events {
public:
    struct setup {
        std::uint64_t node = 0;
        std::uint32_t group = 0;
        replication::raft_options raft;
        replication::durable_state recovered;
    };
    sim_log(setup s, group_disk& disk, replication::raft_transport& transport,
            event_queue& events, checker& check, const tracer& trace);
    ~sim_log() override;

    // log::group_log
    void attach(log::log_listener& listener) override { _listener = &listener; }
    void start() override;
    log::proposal propose(std::string bytes) override;
    void confirm_leadership(confirmed_handler done) override;
    void save_snapshot(std::uint64_t index, std::uint64_t term, state::checkpoint_image image,
                       saved_handler done) override;
    log::leadership current() const override { return _replica.leadership(); }
    void stop() override;

    // A message of this group from a peer.
    void receive(std::string_view message);
    // Leader only: hands the leadership on (an operator's transfer).
    bool transfer(std::uint64_t to);
    const replication::raft_replica& replica() const { return _replica; }

private:
    // raft_events
    void committed(std::uint64_t index, std::uint64_t term,
                   const replication::log_entry& entry) override;
    void applied_through(std::uint64_t index) override;
    void leadership_changed(const log::leadership& now) override;
    void lost(std::uint64_t from_index) override;
    void install(const replication::snapshot_meta& meta, std::string_view image) override;

    std::uint64_t now() const { return _events.now(); }
    void on_report(std::uint64_t token, bool ok);
    // After every call into the replica: the timer.
    void settle();
    void arm_timer();

    std::uint64_t _node;
    std::uint32_t _group;
    group_disk& _disk;
    event_queue& _events;
    checker& _check;
    const tracer& _trace;
    replication::raft_replica _replica;
    replication::durable_state _recovered;
    log::log_listener* _listener = nullptr;
    std::uint64_t _armed_for = 0;  // the timeout an event waits for; 0: none
    std::uint64_t _walked = 0;     // applied entries the checker has seen
    std::uint64_t _given_up = 0;   // writes up to it were dropped by a restart
    bool _stopped = false;
    // Events scheduled for this log check it is still there.
    std::shared_ptr<int> _alive = std::make_shared<int>(0);
    std::vector<confirmed_handler> _confirming;
    std::uint64_t _barrier = 0;
};

}  // namespace dstream::sim
