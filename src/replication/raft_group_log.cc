#include "replication/raft_group_log.h"

#include <algorithm>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "replication/forwarded_proposal.h"
#include "replication/read_index.h"

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
      _courier(s.snapshots ? std::make_unique<snapshot_courier>(
                                 transport, s.group, std::move(*s.snapshots), _io, _strand,
                                 [this](std::string message) {
                                     if (!_stopped) step(message);
                                 })
                           : nullptr),
      _replica(s.raft, *_disk, _courier ? *_courier : transport, *this),
      _recovered(std::move(s.recovered)),
      _timer(_strand),
      _metrics(raft_metrics::get().of(s.group)),
      _transport(transport),
      _max_uncommitted_entries(s.raft.max_uncommitted_entries),
      _max_log_bytes_kept(s.raft.max_log_bytes_kept),
      _catch_up_ms(s.raft.election_ms),
      _answer_timer(_strand) {}

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
    _answer_timer.cancel();
    for (auto& waiting : std::exchange(_confirming, {})) waiting(_replica.leadership(), false);
    for (auto& c : std::exchange(_catching_up, {})) c.done(_replica.leadership(), false);
    expire_forwards();
}

log::proposal raft_group_log::propose(std::string bytes) {
    if (_replica.leadership().leads()) {
        // Bounded before anything is written: a refusal here applied nothing
        // (extensions 11.1), and the writer retries after Retry-After.
        std::optional<error> refusal;
        if (_replica.last_index() - _replica.commit_index() >= _max_uncommitted_entries) {
            refusal = make_error(protocol::error_code::raft_uncommitted_backpressure,
                                 "too many writes wait for a majority of the group; retry later");
        } else if (_replica.bytes_kept() >= _max_log_bytes_kept) {
            refusal = make_error(protocol::error_code::raft_log_pressure,
                                 "the group's log holds too much for a replica behind; retry later");
        }
        if (refusal) {
            _metrics.refused_proposals.fetch_add(1, std::memory_order_relaxed);
            log::proposal p;
            p.what = log::proposal::outcome::refused;
            p.leader = _replica.leadership();
            p.refusal = std::move(refusal);
            return p;
        }
    }
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
    if (_stopped || take_aside(message)) return;
    step(message);
}

void raft_group_log::receive(received_message message) {
    if (_stopped || take_aside(message.view())) return;
    _replica.receive(now(), std::move(message));
    settle();
}

bool raft_group_log::take_aside(std::string_view message) {
    if (is_read_index_message(message)) {
        receive_read_index(message);
        return true;
    }
    if (is_forwarded_proposal(message)) {
        receive_forwarded(message);
        return true;
    }
    if (!message.empty() && static_cast<std::uint8_t>(message.front()) == leader_note_format) {
        if (_replica.leadership().leads() && _listener != nullptr) {
            _listener->told(message.substr(1));
        }
        return true;
    }
    return _courier && _courier->intercept(message);
}

void raft_group_log::step(std::string_view message) {
    _replica.receive(now(), message);
    settle();
}

void raft_group_log::catch_up(confirmed_handler done) {
    const log::leadership who = _replica.leadership();
    if (who.leads()) {
        confirm_leadership(std::move(done));
        return;
    }
    if (_stopped || who.leader == 0) {
        boost::asio::post(_strand, [done = std::move(done), who]() mutable { done(who, false); });
        return;
    }
    const std::uint64_t id = _next_request++;
    _catching_up.push_back({id, now() + _catch_up_ms, std::nullopt, std::move(done)});
    _transport.send(who.leader, encode(read_index_message{read_index_message::kind::request, id,
                                                          _replica.node(), 0}));
    arm_answer_timer();
}

void raft_group_log::forward(std::string bytes, forwarded_handler done) {
    const log::leadership who = _replica.leadership();
    if (who.leads() || _stopped || who.leader == 0) {
        done(propose(std::move(bytes)));
        return;
    }
    const std::uint64_t id = _next_request++;
    _forwarding.push_back({id, now() + _catch_up_ms, std::move(done)});
    forwarded_proposal request;
    request.id = id;
    request.from = _replica.node();
    request.command = std::move(bytes);
    _transport.send(who.leader, encode(request));
    arm_answer_timer();
}

void raft_group_log::receive_forwarded(std::string_view message) {
    auto m = decode_forwarded_proposal(message);
    if (!m) return;  // the sender's wait ends at its deadline
    if (m->what == forwarded_proposal::kind::request) {
        forwarded_proposal answer;
        answer.what = forwarded_proposal::kind::answer;
        answer.id = m->id;
        answer.from = _replica.node();
        answer.answer = propose(std::move(m->command));
        _transport.send(m->from, encode(answer));
        return;
    }
    const auto it = std::find_if(_forwarding.begin(), _forwarding.end(),
                                 [&](const forwarding& f) { return f.id == m->id; });
    if (it == _forwarding.end()) return;  // past its deadline already
    auto done = std::move(it->done);
    _forwarding.erase(it);
    done(std::move(m->answer));
}

void raft_group_log::expire_forwards() {
    const std::uint64_t t = now();
    std::vector<forwarded_handler> expired;
    std::erase_if(_forwarding, [&](forwarding& f) {
        if (!_stopped && f.deadline > t) return false;
        expired.push_back(std::move(f.done));
        return true;
    });
    for (auto& done : expired) {
        log::proposal unknown;
        unknown.what = log::proposal::outcome::refused;
        unknown.leader = _replica.leadership();
        unknown.refusal = make_error(protocol::error_code::outcome_unknown,
                                     "the group's leader did not answer the forwarded write in time");
        done(std::move(unknown));
    }
}

void raft_group_log::tell_leader(std::string note) {
    const log::leadership who = _replica.leadership();
    if (_stopped || who.leads() || who.leader == 0) return;
    note.insert(note.begin(), static_cast<char>(leader_note_format));
    _transport.send(who.leader, note);
}

void raft_group_log::receive_read_index(std::string_view message) {
    const auto m = decode_read_index(message);
    if (!m) return;  // the sender asks again, or gives up at its deadline
    if (m->what == read_index_message::kind::request) {
        answer_read_index(m->from, m->id);
        return;
    }
    const auto it = std::find_if(_catching_up.begin(), _catching_up.end(),
                                 [&](const catching_up& c) { return c.id == m->id; });
    if (it == _catching_up.end()) return;  // past its deadline already
    if (m->what == read_index_message::kind::refused) {
        auto done = std::move(it->done);
        _catching_up.erase(it);
        done(_replica.leadership(), false);
        return;
    }
    it->granted = m->index;
    settle_catch_ups(false);
}

void raft_group_log::answer_read_index(std::uint64_t follower, std::uint64_t id) {
    confirm_leadership([this, follower, id](const log::leadership& /*who*/, bool confirmed) {
        if (_stopped) return;
        // Everything committed when the follower asked is at or below the
        // commit index now, which the round just proved is this leader's.
        read_index_message answer{confirmed ? read_index_message::kind::granted
                                            : read_index_message::kind::refused,
                                  id, _replica.node(), _replica.commit_index()};
        _transport.send(follower, encode(answer));
    });
}

void raft_group_log::settle_catch_ups(bool expired) {
    const std::uint64_t applied = _replica.applied_index();
    const std::uint64_t t = now();
    std::vector<std::pair<confirmed_handler, bool>> finished;
    std::erase_if(_catching_up, [&](catching_up& c) {
        if (c.granted && applied >= *c.granted) {
            finished.emplace_back(std::move(c.done), true);
            return true;
        }
        if (expired && c.deadline <= t) {
            finished.emplace_back(std::move(c.done), false);
            return true;
        }
        return false;
    });
    const log::leadership who = _replica.leadership();
    for (auto& [done, confirmed] : finished) done(who, confirmed);
}

void raft_group_log::arm_answer_timer() {
    if (_answer_timer_armed || (_catching_up.empty() && _forwarding.empty()) || _stopped) return;
    _answer_timer_armed = true;
    _answer_timer.expires_after(std::chrono::milliseconds(_catch_up_ms));
    _answer_timer.async_wait([this](boost::system::error_code ec) {
        _answer_timer_armed = false;
        if (ec || _stopped) return;
        settle_catch_ups(true);
        expire_forwards();
        arm_answer_timer();
    });
}

bool raft_group_log::hand_over() {
    if (_stopped) return false;
    const bool started = _replica.transfer(now(), 0);
    settle();
    return started;
}

void raft_group_log::committed(std::uint64_t index, std::uint64_t term, const log_entry& entry) {
    if (_listener != nullptr) _listener->committed(log::committed_entry{index, term, entry.bytes.view()});
}

void raft_group_log::applied_through(std::uint64_t index) {
    if (_listener != nullptr) _listener->committed_through(index);
    if (!_catching_up.empty()) settle_catch_ups(false);
    if (_barrier != 0 && index >= _barrier) {
        _barrier = 0;
        const log::leadership who = _replica.leadership();
        for (auto& waiting : std::exchange(_confirming, {})) waiting(who, who.leads());
    }
}

void raft_group_log::leadership_changed(const log::leadership& now) {
    _metrics.leadership_changes.fetch_add(1, std::memory_order_relaxed);
    if (now.what == log::role::candidate) _metrics.elections.fetch_add(1, std::memory_order_relaxed);
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
