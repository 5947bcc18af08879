#include "sim_log.h"

#include <fmt/format.h>

namespace dstream::sim {

sim_log::sim_log(setup s, group_disk& disk, replication::raft_transport& transport,
                 event_queue& events, checker& check, const tracer& trace)
    : _node(s.node),
      _group(s.group),
      _disk(disk),
      _events(events),
      _check(check),
      _trace(trace),
      _replica(std::move(s.raft), disk, transport, *this),
      _recovered(std::move(s.recovered)) {}

sim_log::~sim_log() = default;

void sim_log::start() {
    _disk.on_report([this](std::uint64_t token, bool ok) { on_report(token, ok); });
    _walked = _recovered.snapshot ? _recovered.snapshot->index : 0;
    _replica.start(now(), std::move(_recovered));
    settle();
}

void sim_log::on_report(std::uint64_t token, bool ok) {
    if (_stopped) return;
    if (ok) {
        _replica.written(now(), token);
    } else {
        _trace("n{} g{}: write {} failed: the replica restarts from what is durable", _node,
               _group, token);
        ++_check.count().failed_writes;
        const std::uint64_t written_so_far = _disk.last_token();
        _replica.write_failed(now(), token);
        // It restarts, giving up every write made so far and dropping what
        // was not durable from its log, unless its last restart gave that
        // write up already.
        if (token > _given_up) {
            _given_up = written_so_far;
            _disk.restarted(_replica.last_index());
        }
    }
    settle();
}

void sim_log::stop() {
    _stopped = true;
    for (auto& waiting : std::exchange(_confirming, {})) waiting(_replica.leadership(), false);
}

log::proposal sim_log::propose(std::string bytes) {
    log::proposal p = _replica.propose(now(), std::move(bytes));
    settle();
    return p;
}

void sim_log::confirm_leadership(confirmed_handler done) {
    const log::leadership who = _replica.leadership();
    if (!who.leads() || _stopped) {
        auto handler = std::make_shared<confirmed_handler>(std::move(done));
        _events.after(0, [alive = std::weak_ptr<int>(_alive), handler, who] {
            if (!alive.expired()) (*handler)(who, false);
        });
        return;
    }
    _confirming.push_back(std::move(done));
    if (_barrier != 0) return;
    const auto index = _replica.propose_barrier(now());
    if (!index) {
        for (auto& waiting : std::exchange(_confirming, {})) waiting(_replica.leadership(), false);
    } else {
        _barrier = *index;
    }
    settle();
}

void sim_log::save_snapshot(std::uint64_t index, std::uint64_t term, state::checkpoint_image image,
                            saved_handler done) {
    // The node's disk runs `done` only while this incarnation of the node lives.
    _disk.save_snapshot(
        _replica.describe_snapshot(index, term), _replica.term(), _replica.vote(), image,
        [this, index, term, done = std::make_shared<saved_handler>(std::move(done))](bool ok) {
            if (ok) ++_check.count().checkpoints;
            if (ok && !_stopped) {
                _replica.snapshot_taken(now(), index, term);
                settle();
            }
            (*done)(ok ? ok_status()
                       : status(make_error(protocol::error_code::internal,
                                           "checkpoint write failed")));
        });
}

void sim_log::receive(std::string_view message) {
    if (_stopped) return;
    _replica.receive(now(), message);
    settle();
}

bool sim_log::transfer(std::uint64_t to) {
    const bool ok = _replica.transfer(now(), to);
    settle();
    return ok;
}

void sim_log::committed(std::uint64_t index, std::uint64_t term,
                        const replication::log_entry& entry) {
    if (_listener != nullptr) _listener->committed(log::committed_entry{index, term, entry.bytes.view()});
}

void sim_log::applied_through(std::uint64_t index) {
    _check.applied_through(_node, _group, index, _replica.term(), _disk.view(), _walked);
    if (_listener != nullptr) _listener->committed_through(index);
    if (_barrier != 0 && index >= _barrier) {
        _barrier = 0;
        const log::leadership who = _replica.leadership();
        for (auto& waiting : std::exchange(_confirming, {})) waiting(who, who.leads());
    }
}

void sim_log::leadership_changed(const log::leadership& now) {
    _trace("n{} g{}: {} term {} leader n{} (log {}..{}, commit {})", _node, _group,
           log::name(now.what), now.term, now.leader, _disk.view().base_index() + 1,
           _disk.view().last_index(), _replica.commit_index());
    _check.leadership(_node, _group, now, _disk.view());
    if (!now.leads() && !_confirming.empty()) {
        _barrier = 0;
        for (auto& waiting : std::exchange(_confirming, {})) waiting(now, false);
    }
    if (_listener != nullptr) _listener->leadership_changed(now);
}

void sim_log::lost(std::uint64_t from_index) {
    if (_listener == nullptr) return;
    _listener->proposals_lost(
        from_index, make_error(protocol::error_code::wal_disk_pressure,
                               "the write-ahead log cannot persist writes; retry later"));
}

void sim_log::install(const replication::snapshot_meta& meta, std::string_view image) {
    _trace("n{} g{}: installs the leader's snapshot at index {} term {}", _node, _group,
           meta.index, meta.term);
    ++_check.count().installs;
    _walked = std::max(_walked, meta.index);
    _disk.installed();
    if (_listener != nullptr) _listener->install(meta.index, meta.term, image);
}

void sim_log::settle() {
    // The view is the checks' model of the replica's log: it must end where the log does.
    if (_disk.view().last_index() != _replica.last_index()) {
        _check.fail("log model", fmt::format("g{}: n{}'s log ends at {}, its model at {}", _group,
                                             _node, _replica.last_index(),
                                             _disk.view().last_index()));
    }
    arm_timer();
}

void sim_log::arm_timer() {
    if (_stopped) return;
    const std::uint64_t due = _replica.next_timeout();
    // As raft_group_log: a wait that ends earlier re-arms when it ends; a
    // replaced one is ignored when it comes (a cancelled timer).
    if (_armed_for != 0 && _armed_for <= due) return;
    _armed_for = due;
    _events.at(due, [this, alive = std::weak_ptr<int>(_alive), due] {
        if (alive.expired() || _stopped || _armed_for != due) return;
        _armed_for = 0;
        _replica.tick(now());
        settle();
    });
}

}  // namespace dstream::sim
