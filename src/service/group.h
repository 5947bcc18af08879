#pragma once
// One group on this node: its strand, its replicated log and the four parts
// that share its state: the replica (what every replica does: apply), the
// leader (what only the leader does: propose, and the leader's jobs), the
// reads, and the live readers. The group is the log's listener and hands
// each notification to the parts; every member function runs on the strand
// but submit().
#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include <boost/asio/steady_timer.hpp>

#include "log/group_log.h"
#include "runtime/clock.h"
#include "runtime/compact_strand.h"
#include "runtime/fanout_lanes.h"
#include "runtime/random.h"
#include "service/checkpoint_schedule.h"
#include "service/cold_tier.h"
#include "service/group_leader.h"
#include "service/group_reads.h"
#include "service/group_replica.h"
#include "service/live_readers.h"
#include "service/live_update.h"
#include "service/stream_service.h"

namespace dstream::service {

// A source's reference to a fork, and the command that would drop it.
struct fork_reference {
    std::string fork_key;
    state::drop_fork_ref drop;
};

// A group's state as of its applied index, captured by its leader for a
// backup (the admin listener), with the cold objects it references held.
struct group_capture {
    std::optional<error> refusal;  // NO_LEADER: this node does not lead the group
    std::uint64_t index = 0;
    std::uint64_t term = 0;
    std::uint64_t history_id = 0;
    std::uint64_t streams = 0;
    state::checkpoint_image image;
    std::vector<std::string> objects;
    std::shared_ptr<void> hold;
};
// Holds the objects a capture references until the handle it returns is dropped.
using hold_objects_fn = std::function<std::shared_ptr<void>(const std::vector<std::string>&)>;

// What a group needs of its node.
struct group_inputs {
    const runtime::clock& clock;
    runtime::random_source& random;
    runtime::fanout_lanes& lanes;
    cold_tier cold;
    checkpointing checkpoints;
};

class group final : private live_source, private log::log_listener {
public:
    group(std::uint32_t id, group_strand strand, const group_inputs& inputs);

    // `hosted`: false for a group of which this node holds no replica (its
    // log never leads nor commits; the edge redirects to a node that hosts it).
    void attach_log(std::unique_ptr<log::group_log> log, bool hosted = true);
    // Where this group's streams are answered; any thread.
    placement where() const;
    // On the strand: `done(true)` once this replica applied what the leader
    // had committed when asked, as the leader proved (extensions 9.2,
    // group_log::catch_up); false when no leader could prove it.
    void catch_up(unique_function<void(bool)> done);
    // Where commands for other groups go (a fork's release of its source).
    void set_forwarder(command_forwarder forward) { _leader.set_forwarder(std::move(forward)); }
    const group_strand& strand() const { return _strand; }
    const cold_tier& cold() const { return _cold; }
    std::uint32_t id() const { return _id; }

    // Start-up, before the log starts, on one thread: the state of a
    // checkpoint, then every command recovery replays after it.
    void restore(state::group_state state, std::uint64_t index, std::uint64_t term);
    void replay(std::uint64_t index, std::uint64_t term, std::string_view bytes);
    std::uint64_t applied_index() const { return _replica.applied_index(); }
    std::uint64_t applied_term() const { return _replica.applied_term(); }
    // On the strand: starts the log and the group's timers.
    void start();
    log::group_log* log() { return _log.get(); }

    void submit(state::command_body&& body, write_done done) {
        _leader.submit(std::move(body), std::move(done));
    }
    void submit_from_request(state::command_body&& body, write_done done) {
        _leader.submit_from_request(std::move(body), std::move(done));
    }
    void submit_via_leader(state::command_body&& body, write_done done) {
        _leader.submit_via_leader(std::move(body), std::move(done));
    }
    read_plan read(const read_request& request,
                   std::optional<std::uint64_t> as_source_of = std::nullopt);
    result<fork_source_view> fork_source(const std::string& key) { return _reads.fork_source(key); }
    std::optional<state::apply_result> answer_before_body(const state::append& headers) {
        return _reads.answer_before_body(headers);
    }
    snapshot_view read_snapshot(const std::string& key, std::uint64_t offset, std::uint64_t first,
                                std::uint64_t length, std::string& object_key) {
        return _reads.read_snapshot(key, offset, first, length, object_key);
    }
    bootstrap_view bootstrap(const std::string& key, std::uint64_t max_update_bytes,
                             std::string& snapshot_object_key) {
        return _reads.bootstrap(key, max_update_bytes, snapshot_object_key);
    }
    // Fires `signal` when the stream `request` reads changes from its
    // position (at once when it already has), with that read when it can be
    // shared (see stream_service::wait).
    void watch(const read_request& request, const std::shared_ptr<live_signal>& signal);
    // Offers `subscription` every change of the stream `request` reads from
    // its position on, until the reader leaves, falls behind or must read
    // for itself (live_subscription.h).
    void follow(read_request request, const std::shared_ptr<live_subscription>& subscription);
    // Shutdown: wakes every live reader, and later watches fail so that
    // their readers answer at once.
    void stop_watches() { _live.stop(); }
    // On the strand: the state as of the applied index, if this replica
    // leads, with its objects held from this moment (before any later apply
    // makes one garbage).
    group_capture capture(const hold_objects_fn& hold) const;
    // The cold objects (chunks, snapshot bodies) every stream references.
    void collect_object_keys(std::unordered_set<std::string>& out) const;
    // Every fork reference held by this group's streams, for the start-up
    // check that each names a fork that still exists.
    std::vector<fork_reference> fork_references() const;
    // Whether the fork a reference names exists here (live or retired) and
    // holds that reference.
    bool holds_fork(const fork_reference& held) const;

private:
    // log::log_listener
    void committed(const log::committed_entry& entry) override;
    void committed_through(std::uint64_t index) override;
    // Hands the live readers of every stream changed since the last offer
    // the read each would make next.
    void offer_changes();
    void leadership_changed(const log::leadership& now) override;
    void proposals_lost(std::uint64_t from_index, const error& why) override;
    void install(std::uint64_t index, std::uint64_t term, std::string_view image) override;
    void told(std::string_view note) override;
    // A follower's read renewed a sliding TTL: the leader, whose expiry
    // counts, is told (at most every renewal_note_interval per stream).
    void tell_renewal(const std::string& key);
    // live_source
    std::shared_ptr<const live_update> live_answer(const read_request& request) override {
        return _reads.live_answer(request);
    }

    void schedule_sweep();
    // Every replica checkpoints its own state, so that its own log stays
    // bounded: after enough applied log, or on a sweep its schedule names.
    void maybe_checkpoint(bool swept);

    std::uint32_t _id;
    group_strand _strand;
    cold_tier _cold;
    checkpointing _checkpoints;
    const runtime::clock& _clock;
    service_metrics& _metrics;
    group_replica _replica;
    group_reads _reads;
    group_leader _leader;
    live_readers _live;
    std::unique_ptr<log::group_log> _log;
    bool _hosted = true;
    // The leadership as last told, packed (leads, leader, term) so that a
    // reader on any thread sees one consistent triple.
    std::atomic<std::uint64_t> _standing{0};
    // A follower's last note to the leader of each stream's renewal.
    std::unordered_map<std::string, protocol::unix_ms> _renewals_told;
    // The streams the entries of a batch changed, woken once it is applied.
    std::vector<std::string> _changed;
    std::uint64_t _checkpoint_index = 0;
    bool _checkpointing = false;
    checkpoint_schedule _checkpoint_schedule;
    boost::asio::steady_timer _sweep_timer;
};

}  // namespace dstream::service
