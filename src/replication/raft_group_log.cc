#include "replication/raft_group_log.h"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace dstream::replication {

void no_peers::send(std::uint64_t to, std::string_view /*bytes*/) {
    // A one-voter group never sends; a configuration naming peers needs a
    // node that has them (--cluster).
    spdlog::error("raft: a message for node {} on a node without peers is dropped", to);
}

raft_group_log::raft_group_log(setup s, std::unique_ptr<group_disk> disk,
                               raft_transport& transport)
    : _group(s.group),
      _strand(std::move(s.strand)),
      _io(std::move(s.io)),
      _clock(s.clock != nullptr ? *s.clock : runtime::system_clock()),
      _disk(std::move(disk)),
      _replica(std::move(s.raft), *_disk, transport, *this),
      _recovered(std::move(s.recovered)),
      _timer(_strand),
      _metrics(raft_metrics::get().of(s.group)) {}

raft_group_log::~raft_group_log() = default;

void raft_group_log::start() {
    _disk->on_report([this](std::uint64_t token, const status& st) {
        if (_stopped) return;
        if (st) {
            _replica.written(now(), token);
        } else {
            _replica.write_failed(now(), token);
        }
        settle();
    });
    _replica.start(now(), std::move(_recovered));
    settle();
}

void raft_group_log::stop() {
    _stopped = true;
    _timer.cancel();
    for (auto& waiting : std::exchange(_confirming, {})) waiting(_replica.leadership(), false);
}

log::proposal raft_group_log::propose(std::string bytes) {
    log::proposal p = _replica.propose(now(), std::move(bytes));
    settle();
    return p;
}

void raft_group_log::confirm_leadership(confirmed_handler done) {
    const log::leadership who = _replica.leadership();
    if (!who.leads() || _stopped) {
        boost::asio::post(_strand, [done = std::move(done), who]() mutable { done(who, false); });
        return;
    }
    if (_replica.voters() == 1 && _replica.applied_index() >= _replica.commit_index()) {
        // A sole voter is the majority: nothing to prove, nothing to wait for.
        boost::asio::post(_strand, [done = std::move(done), who]() mutable { done(who, true); });
        return;
    }
    _confirming.push_back(std::move(done));
    if (_barrier == 0) {
        const auto index = _replica.propose_barrier(now());
        if (!index) {
            for (auto& waiting : std::exchange(_confirming, {})) {
                waiting(_replica.leadership(), false);
            }
        } else {
            _barrier = *index;
        }
        settle();
    }
}

void raft_group_log::save_snapshot(std::uint64_t index, std::uint64_t term,
                                   state::checkpoint_image image, saved_handler done) {
    snapshot_record record{_replica.describe_snapshot(index, term), _replica.term(),
                           _replica.vote()};
    boost::asio::post(_io, [this, record = std::move(record), image = std::move(image),
                            done = std::move(done)]() mutable {
        const status saved = _disk->save_snapshot(record, image);
        boost::asio::post(_strand, [this, index = record.meta.index, term = record.meta.term,
                                    saved, done = std::move(done)]() mutable {
            if (saved && !_stopped) {
                _replica.snapshot_taken(now(), index, term);
                settle();
            }
            done(saved);
        });
    });
}

void raft_group_log::receive(std::string_view message) {
    if (_stopped) return;
    _replica.receive(now(), message);
    settle();
}

bool raft_group_log::hand_over() {
    if (_stopped) return false;
    const bool started = _replica.transfer(now(), 0);
    settle();
    return started;
}

void raft_group_log::committed(std::uint64_t index, std::uint64_t term, const log_entry& entry) {
    if (_listener != nullptr) _listener->committed(log::committed_entry{index, term, entry.bytes});
}

void raft_group_log::applied_through(std::uint64_t index) {
    if (_listener != nullptr) _listener->committed_through(index);
    if (_barrier != 0 && index >= _barrier) {
        _barrier = 0;
        const log::leadership who = _replica.leadership();
        for (auto& waiting : std::exchange(_confirming, {})) waiting(who, who.leads());
    }
}

void raft_group_log::leadership_changed(const log::leadership& now) {
    _metrics.leadership_changes.fetch_add(1, std::memory_order_relaxed);
    if (!now.leads() && !_confirming.empty()) {
        _barrier = 0;
        for (auto& waiting : std::exchange(_confirming, {})) waiting(now, false);
    }
    if (_listener != nullptr) _listener->leadership_changed(now);
}

void raft_group_log::lost(std::uint64_t from_index) {
    if (_listener == nullptr) return;
    _listener->proposals_lost(
        from_index, make_error(protocol::error_code::wal_disk_pressure,
                               "the write-ahead log cannot persist writes; retry later"));
}

void raft_group_log::install(const snapshot_meta& meta, std::string_view image) {
    if (_listener != nullptr) _listener->install(meta.index, meta.term, image);
}

void raft_group_log::settle() {
    const log::leadership who = _replica.leadership();
    _metrics.role.store(static_cast<std::uint32_t>(who.what), std::memory_order_relaxed);
    _metrics.term.store(who.term, std::memory_order_relaxed);
    _metrics.leader.store(who.leader, std::memory_order_relaxed);
    _metrics.commit_index.store(_replica.commit_index(), std::memory_order_relaxed);
    _metrics.applied_index.store(_replica.applied_index(), std::memory_order_relaxed);
    _metrics.last_index.store(_replica.last_index(), std::memory_order_relaxed);
    _metrics.entries_kept_bytes.store(_replica.bytes_kept(), std::memory_order_relaxed);
    arm_timer();
}

void raft_group_log::arm_timer() {
    if (_stopped) return;
    const std::uint64_t due = _replica.next_timeout();
    // A wait that ends earlier re-arms when it ends: re-arming a timer for
    // every proposal would cost more than an early tick.
    if (_armed_for != 0 && _armed_for <= due) return;
    _armed_for = due;
    _timer.expires_at(std::chrono::steady_clock::time_point(std::chrono::milliseconds(due)));
    _timer.async_wait([this, due](boost::system::error_code ec) {
        if (ec || _stopped) return;  // replaced by an earlier one, or stopped
        if (_armed_for == due) _armed_for = 0;
        _replica.tick(now());
        settle();
    });
}

}  // namespace dstream::replication
