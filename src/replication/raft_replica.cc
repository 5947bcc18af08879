#include "replication/raft_replica.h"

#include <algorithm>
#include <new>
#include <stdexcept>

#include "replication/raft/raft_core.h"

namespace dstream::replication {
namespace {

log::role role_of(int state) {
    switch (state) {
        case RAFT_CORE_LEADER:
            return log::role::leader;
        case RAFT_CORE_CANDIDATE:
            return log::role::candidate;
        default:
            return log::role::follower;
    }
}

entry_kind kind_of(int type) {
    switch (type) {
        case RAFT_CORE_BARRIER:
            return entry_kind::barrier;
        case RAFT_CORE_CHANGE:
            return entry_kind::configuration;
        default:
            return entry_kind::command;
    }
}

int type_of(entry_kind kind) {
    switch (kind) {
        case entry_kind::barrier:
            return RAFT_CORE_BARRIER;
        case entry_kind::configuration:
            return RAFT_CORE_CHANGE;
        case entry_kind::command:
            break;
    }
    return RAFT_CORE_COMMAND;
}

// Errors that leave the replica unusable: the process must not go on with
// a log it cannot trust (the Raft invariants would not hold).
void check_fatal(raft_core* core, int rv) {
    if (rv == RAFT_CORE_NOMEM) throw std::bad_alloc();
    if (rv == RAFT_CORE_SHUTDOWN || rv == RAFT_CORE_INVALID) {
        throw std::logic_error(std::string("raft: ") + raft_core_strerror(rv) + ": " +
                               raft_core_errmsg(core));
    }
}

}  // namespace

void raft_transport::send_pieces(std::uint64_t to, std::span<const byte_slice> pieces) {
    std::string joined;
    std::size_t size = 0;
    for (const auto& p : pieces) size += p.size;
    joined.reserve(size);
    for (const auto& p : pieces) joined += p.view();
    send(to, joined);
}

raft_replica::raft_replica(raft_options options, raft_storage& storage, raft_transport& transport,
                           raft_events& events)
    : _options(std::move(options)), _storage(storage), _transport(transport), _events(events) {
    create_core();
}

raft_replica::~raft_replica() {
    if (_core != nullptr) raft_core_destroy(_core);
}

void raft_replica::create_core() {
    const raft_core_storage callbacks{this, &raft_replica::entry_callback,
                                      &raft_replica::snapshot_callback};
    _core = raft_core_create(_options.node, nullptr, &callbacks);
    if (_core == nullptr) throw std::bad_alloc();
    if (raft_core_set_timeouts(_core, _options.election_ms, _options.heartbeat_ms) !=
        RAFT_CORE_OK) {
        throw std::invalid_argument(
            "raft: the heartbeat must be shorter than the election timeout");
    }
    raft_core_set_seed(_core, static_cast<unsigned>(_options.seed ^ (_options.seed >> 32)));
    raft_core_set_pre_vote(_core, _options.pre_vote ? 1 : 0);
    raft_core_set_install_snapshot_timeout(_core, _options.install_snapshot_ms);
    raft_core_set_reference_bytes(_core, _options.reference_bytes);
    raft_core_set_message_entry_bytes(_core, _options.message_entry_bytes);
}

const log_entry* raft_replica::entry_at(std::uint64_t index) const {
    if (index < _first || index >= _first + _log.size()) return nullptr;
    return &_log[index - _first];
}

void raft_replica::start(std::uint64_t now, durable_state state) {
    _now = now;
    const raft_core_update* update = nullptr;
    if (state.term == 0) {
        const int rv = raft_core_bootstrap(_core, now, _options.voters.data(),
                                           _options.voters.size(), &update);
        check_fatal(_core, rv);
        absorb(rv, update);
        return;
    }
    _term = _durable_term = state.term;
    _vote = _durable_vote = state.vote;
    _first = state.first_index;
    for (auto& e : state.entries) {
        _bytes_kept += e.bytes.size;
        if (e.kind == entry_kind::configuration) {
            _configuration_index = _first + _log.size();
        }
        _log.push_back(std::move(e));
    }
    _durable_index = last_index();
    std::vector<raft_core_entry> entries;
    entries.reserve(_log.size());
    for (const auto& e : _log) {
        entries.push_back({e.term, type_of(e.kind), e.bytes.data, e.bytes.size});
    }
    std::vector<raft_core_server> servers;
    raft_core_snapshot snapshot{};
    raft_core_persisted_state persisted{};
    persisted.term = state.term;
    persisted.voted_for = state.vote;
    persisted.start_index = _first;
    persisted.entries = entries.data();
    persisted.n_entries = entries.size();
    if (state.snapshot) {
        _snapshot = std::move(state.snapshot);
        _configuration_index = std::max(_configuration_index, _snapshot->configuration_index);
        for (const auto id : _snapshot->voters) servers.push_back({id, RAFT_CORE_VOTER});
        snapshot.index = _snapshot->index;
        snapshot.term = _snapshot->term;
        snapshot.configuration_index = _snapshot->configuration_index;
        snapshot.servers = servers.data();
        snapshot.n_servers = servers.size();
        persisted.snapshot = &snapshot;
        _applied = _commit = _snapshot->index;
        _applied_term = _snapshot->term;
    }
    const int rv = raft_core_start(_core, now, &persisted, &update);
    check_fatal(_core, rv);
    absorb(rv, update);
}

log::proposal raft_replica::propose(std::uint64_t now, std::string bytes) {
    _now = now;
    log::proposal out;
    out.leader = _leadership;
    if (!_leadership.leads() || _failed) {
        out.what = log::proposal::outcome::not_leader;
        return out;
    }
    std::uint64_t index = 0;
    const raft_core_update* update = nullptr;
    // The core copies the bytes; the log takes these (absorb() below).
    _proposed_index = last_index() + 1;
    _proposed = std::move(bytes);
    const int rv =
        raft_core_submit(_core, now, _proposed.data(), _proposed.size(), &index, &update);
    if (rv != RAFT_CORE_OK) {
        _proposed_index = 0;
        _proposed.clear();
        check_fatal(_core, rv);
        absorb(rv, update);
        out.what = log::proposal::outcome::not_leader;
        out.leader = _leadership;
        return out;
    }
    out.what = log::proposal::outcome::accepted;
    out.index = index;
    out.term = raft_core_term(_core);
    absorb(rv, update);
    out.leader = _leadership;
    return out;
}

std::optional<std::uint64_t> raft_replica::propose_barrier(std::uint64_t now) {
    _now = now;
    if (!_leadership.leads() || _failed) return std::nullopt;
    std::uint64_t index = 0;
    const raft_core_update* update = nullptr;
    const int rv = raft_core_submit_barrier(_core, now, &index, &update);
    check_fatal(_core, rv);
    absorb(rv, update);
    if (rv != RAFT_CORE_OK) return std::nullopt;
    return index;
}

void raft_replica::receive(std::uint64_t now, std::string_view message) {
    _now = now;
    if (_failed) return;  // a restarting replica hears nothing; the sender retries
    const raft_core_update* update = nullptr;
    const int rv = raft_core_receive(_core, now, message.data(), message.size(), &update);
    received(rv, update);
}

void raft_replica::receive(std::uint64_t now, received_message message) {
    _now = now;
    if (_failed) return;
    const raft_core_update* update = nullptr;
    const std::size_t size = message.size();
    const int rv = raft_core_receive_owned(_core, now, message.release(), size, &update);
    received(rv, update);
}

void raft_replica::received(int rv, const raft_core_update* update) {
    // A message that does not decode is dropped; the sender retries.
    if (rv == RAFT_CORE_MALFORMED) return;
    check_fatal(_core, rv);
    absorb(rv, update);
}

void raft_replica::tick(std::uint64_t now) {
    _now = now;
    if (_failed) return;
    const raft_core_update* update = nullptr;
    const int rv = raft_core_timeout(_core, now, &update);
    check_fatal(_core, rv);
    absorb(rv, update);
}

bool raft_replica::transfer(std::uint64_t now, std::uint64_t to) {
    _now = now;
    if (!_leadership.leads() || _failed) return false;
    const raft_core_update* update = nullptr;
    const int rv = raft_core_transfer(_core, now, to, &update);
    if (rv == RAFT_CORE_NOMEM) throw std::bad_alloc();
    absorb(rv, update);
    return rv == RAFT_CORE_OK;
}

std::uint64_t raft_replica::next_timeout() const { return raft_core_next_timeout(_core); }

void raft_replica::absorb(int /*rv*/, const raft_core_update* u) {
    if (u == nullptr) return;
    // Everything is taken out of the update before any callback runs: a
    // callback may propose, which makes a new update.
    if ((u->flags & (RAFT_CORE_UPDATE_TERM | RAFT_CORE_UPDATE_VOTE)) != 0 &&
        (u->term != _term || u->voted_for != _vote)) {
        _term = u->term;
        _vote = u->voted_for;
        const std::uint64_t token = _next_token++;
        _hard_state_token = token;
        _hard_states_in_flight.push_back({token, _term, _vote});
        _storage.write_hard_state(token, _term, _vote);
    }
    if ((u->flags & RAFT_CORE_UPDATE_ENTRIES) != 0) {
        const std::uint64_t from = u->entries_index;
        if (from <= last_index()) {
            // A conflicting suffix: gone here, and the writes in flight now
            // prove nothing past it.
            while (!_log.empty() && last_index() >= from) {
                _bytes_kept -= _log.back().bytes.size;
                _log.pop_back();
            }
            std::erase_if(_entries_in_flight,
                          [from](const entry_write& w) { return w.index >= from; });
            _durable_index = std::min(_durable_index, from - 1);
        }
        if (_log.empty()) _first = from;
        // The bytes stay where the core has them: a proposal's in
        // `_proposed`, a received message's in the batch it was decoded to.
        std::shared_ptr<const void> batch;
        if (void* taken = raft_core_take_entries(_core)) {
            batch = std::shared_ptr<const void>(taken, raft_core_free_entries);
        }
        for (std::size_t i = 0; i < u->n_entries; ++i) {
            const raft_core_entry& e = u->entries[i];
            const std::uint64_t index = from + i;
            log_entry entry;
            entry.term = e.term;
            entry.kind = kind_of(e.type);
            if (index == _proposed_index && entry.kind == entry_kind::command) {
                entry.bytes = byte_slice::owning(std::move(_proposed));
                _proposed_index = 0;
            } else if (batch) {
                entry.bytes = byte_slice{batch, static_cast<const char*>(e.data), e.len};
            } else {
                entry.bytes = byte_slice::owning(std::string(static_cast<const char*>(e.data), e.len));
            }
            if (entry.kind == entry_kind::configuration) _configuration_index = index;
            _bytes_kept += entry.bytes.size;
            _log.push_back(std::move(entry));
            const std::uint64_t token = _next_token++;
            _entries_in_flight.push_back({token, index});
            _storage.write_entry(token, index, _log.back());
        }
    }
    if ((u->flags & RAFT_CORE_UPDATE_SNAPSHOT) != 0) {
        snapshot_meta meta;
        meta.index = u->snapshot.index;
        meta.term = u->snapshot.term;
        meta.configuration_index = u->snapshot.configuration_index;
        for (std::size_t i = 0; i < u->snapshot.n_servers; ++i) {
            if (u->snapshot.servers[i].role == RAFT_CORE_VOTER) {
                meta.voters.push_back(u->snapshot.servers[i].id);
            }
        }
        std::string image(static_cast<const char*>(u->snapshot.data), u->snapshot.len);
        // The whole log goes: the snapshot replaces it. Until the snapshot
        // is durable the log it replaces is the one on disk: a failed write
        // restarts from that.
        _replaced = replaced_log{std::move(_log), _first, _bytes_kept, _durable_index, _commit};
        _log.clear();
        _bytes_kept = 0;
        _first = meta.index + 1;
        _entries_in_flight.clear();
        _durable_index = meta.index;
        _installing_token = _next_token++;
        _storage.write_snapshot(_installing_token, snapshot_record{meta, _term, _vote}, image);
        _installing.emplace(std::move(meta), std::move(image));
    }
    if ((u->flags & RAFT_CORE_UPDATE_MESSAGES) != 0) {
        // Messages wait for the hard state written before them.
        const bool hold = !_held.empty() || _hard_state_token > _durable_token;
        for (std::size_t i = 0; i < u->n_messages; ++i) {
            const auto& m = u->messages[i];
            const std::string_view bytes(static_cast<const char*>(m.data), m.len);
            if (m.n_holes == 0 && !hold) {
                _transport.send(m.to, bytes);
                continue;
            }
            auto pieces = pieces_of(m);
            if (!pieces) continue;
            if (hold) {
                _held.push_back({_hard_state_token, m.to, std::move(*pieces)});
            } else {
                send(m.to, *pieces);
            }
        }
    }
    _commit = std::max(_commit, u->commit_index);
    apply_committed(_now);
    report_leadership();
    take_pending_snapshot(_now);
}

void raft_replica::apply_committed(std::uint64_t now) {
    if (_applying) return;  // the loop below goes on with the new commit index
    _applying = true;
    const std::uint64_t applied_before = _applied;
    // Only what this replica's disk holds: a checkpoint is of the applied
    // state, and recovery reads the log's records after it. A follower told
    // of a commit before its own write of the entries is durable would
    // otherwise checkpoint past them, and a crash would bring back the
    // suffix those writes cut off.
    while (_applied < std::min(_commit, _durable_index)) {
        const std::uint64_t index = _applied + 1;
        const log_entry* e = entry_at(index);
        if (e == nullptr) break;  // committed elsewhere, not yet here
        _applied = index;
        _applied_term = e->term;
        switch (e->kind) {
            case entry_kind::command:
                // Adding entries to the back keeps `e` valid (a deque).
                _events.committed(index, e->term, *e);
                break;
            case entry_kind::configuration: {
                const raft_core_update* update = nullptr;
                const int rv = raft_core_apply_change(_core, now, index, e->bytes.data,
                                                      e->bytes.size, &update);
                check_fatal(_core, rv);
                absorb(rv, update);
                break;
            }
            case entry_kind::barrier:
                break;
        }
    }
    const bool moved = _applied != applied_before;
    _applying = false;
    drop_applied_entries();
    if (moved) _events.applied_through(_applied);
}

void raft_replica::drop_applied_entries() {
    // A sole voter has no follower to send entries to: what it applied goes.
    // Otherwise entries go once a snapshot covers them and `trailing` more.
    std::uint64_t keep_after = _applied;
    if (_options.voters.size() > 1) {
        const std::uint64_t covered =
            _snapshot && _snapshot->index > _options.trailing ? _snapshot->index - _options.trailing
                                                               : 0;
        keep_after = std::min(keep_after, covered);
    }
    while (!_log.empty() && _first <= keep_after && _first <= _durable_index) {
        _bytes_kept -= _log.front().bytes.size;
        _log.pop_front();
        ++_first;
    }
}

void raft_replica::report_leadership() {
    log::leadership now;
    now.what = role_of(raft_core_state(_core));
    now.term = raft_core_term(_core);
    now.leader = raft_core_leader(_core);
    if (now == _leadership) return;
    _leadership = now;
    _events.leadership_changed(now);
}

void raft_replica::written(std::uint64_t now, std::uint64_t token) {
    _now = now;
    if (token <= _durable_token) return;
    _durable_token = token;
    while (!_hard_states_in_flight.empty() && _hard_states_in_flight.front().token <= token) {
        _durable_term = _hard_states_in_flight.front().term;
        _durable_vote = _hard_states_in_flight.front().vote;
        _hard_states_in_flight.pop_front();
    }
    if (_installing && _installing_token <= token) {
        auto [meta, image] = std::move(*_installing);
        _installing.reset();
        _replaced.reset();
        // The state a snapshot the core did not take yet describes is gone
        // (the leader's may even be older: entries applied here that this
        // log no longer held).
        _pending_snapshot.reset();
        _events.install(meta, image);
        _applied = meta.index;
        _commit = std::max(_commit, meta.index);
        _applied_term = meta.term;
        _configuration_index = meta.configuration_index;
        _snapshot = std::move(meta);
        const raft_core_update* update = nullptr;
        const int rv = raft_core_persisted_snapshot(_core, now, &update);
        check_fatal(_core, rv);
        absorb(rv, update);
    }
    std::uint64_t durable = 0;
    while (!_entries_in_flight.empty() && _entries_in_flight.front().token <= token) {
        durable = _entries_in_flight.front().index;
        _entries_in_flight.pop_front();
    }
    release_messages();
    if (durable != 0 && !_failed) {
        _durable_index = std::max(_durable_index, durable);
        const raft_core_update* update = nullptr;
        const int rv = raft_core_persisted_entries(_core, now, durable, &update);
        check_fatal(_core, rv);
        absorb(rv, update);
        // The commit index may have been ahead of this disk.
        apply_committed(now);
    }
}

void raft_replica::release_messages() {
    while (!_held.empty() && _held.front().gate <= _durable_token) {
        send(_held.front().to, _held.front().pieces);
        _held.pop_front();
    }
}

std::optional<std::vector<byte_slice>> raft_replica::pieces_of(const raft_core_message& m) const {
    const auto* data = static_cast<const char*>(m.data);
    auto own = std::make_shared<const std::string>(data, m.len);
    std::vector<byte_slice> pieces;
    pieces.reserve(2 * m.n_holes + 1);
    std::size_t at = 0;
    for (std::size_t i = 0; i < m.n_holes; ++i) {
        const raft_core_hole& h = m.holes[i];
        const log_entry* e = entry_at(h.index);
        if (e == nullptr || e->bytes.size != h.len) return std::nullopt;
        pieces.push_back(byte_slice{own, own->data() + at, h.at - at});
        pieces.push_back(e->bytes);
        at = h.at;
    }
    pieces.push_back(byte_slice{own, own->data() + at, m.len - at});
    return pieces;
}

void raft_replica::send(std::uint64_t to, std::span<const byte_slice> pieces) {
    if (pieces.size() == 1) {
        _transport.send(to, pieces.front().view());
    } else {
        _transport.send_pieces(to, pieces);
    }
}

void raft_replica::write_failed(std::uint64_t now, std::uint64_t token) {
    _now = now;
    // A write the last restart already gave up: nothing more is lost.
    if (token < _restart_token) return;
    // Every write not reported durable is lost with it: nothing before it
    // counts as durable on this report (the node's WAL names a failed batch
    // by its last token, so earlier writes of the batch failed too).
    _failed = true;
    if (_options.voters.size() == 1 && _durable_index < last_index()) {
        // No other replica has them: they are lost, and refusals.
        _events.lost(_durable_index + 1);
    }
    restart_from_durable(now);
}

void raft_replica::restart_from_durable(std::uint64_t now) {
    if (_installing && _replaced) {
        // The leader's snapshot did not become durable.
        _log = std::move(_replaced->log);
        _first = _replaced->first;
        _bytes_kept = _replaced->bytes_kept;
        _durable_index = _replaced->durable_index;
        // Its commit index was the snapshot's: the old log's entries past
        // the old one may be another leader's.
        _commit = _replaced->commit;
    }
    _replaced.reset();
    if (_pending_snapshot) {
        // Durable (a checkpoint): the restart may start from it, with only
        // the entries the replica keeps after it (the core keeps every entry
        // it starts with).
        if (!_snapshot || _snapshot->index < _pending_snapshot->index) _snapshot = _pending_snapshot;
        _pending_snapshot.reset();
        drop_applied_entries();
    }
    while (!_log.empty() && last_index() > _durable_index) {
        _bytes_kept -= _log.back().bytes.size;
        _log.pop_back();
    }
    _held.clear();
    _hard_states_in_flight.clear();
    _entries_in_flight.clear();
    _installing.reset();
    _proposed_index = 0;
    _term = _durable_term;
    _vote = _durable_vote;
    _hard_state_token = 0;
    raft_core_destroy(_core);
    _core = nullptr;
    create_core();
    _failed = false;
    _restart_token = _next_token;

    if (_durable_index == 0 && !_snapshot) {
        // Entry 1 of its bootstrap never became durable (the term may have):
        // it bootstraps again, as recovery does from a log without entries.
        // Started with a term and no configuration it could never vote nor
        // lead.
        _log.clear();
        _bytes_kept = 0;
        _first = 1;
        _durable_index = 0;
        start(now, durable_state{});
        return;
    }
    durable_state state;
    state.term = std::max<std::uint64_t>(_durable_term, 1);
    state.vote = _durable_vote;
    if (_options.voters.size() == 1) {
        // A sole voter's applied entries are gone from memory: its applied
        // state stands for a snapshot (no follower will ever ask for it).
        state.snapshot = snapshot_meta{_applied, _applied_term, _configuration_index,
                                       _options.voters};
        state.first_index = _applied + 1;
        while (!_log.empty() && _first <= _applied) {
            _bytes_kept -= _log.front().bytes.size;
            _log.pop_front();
            ++_first;
        }
    } else {
        // The snapshot covers only durable entries: it is of what was
        // applied, and only durable entries are.
        state.snapshot = _snapshot;
        state.first_index = _first;
    }
    const std::uint64_t applied = _applied;
    const std::uint64_t applied_term = _applied_term;
    const std::uint64_t commit = _commit;
    for (auto& e : _log) state.entries.push_back(std::move(e));
    _log.clear();
    _bytes_kept = 0;
    _snapshot.reset();
    start(now, std::move(state));
    // What was applied stays applied.
    _applied = std::max(_applied, applied);
    _applied_term = std::max(_applied_term, applied_term);
    _commit = std::max(_commit, commit);
}

void raft_replica::snapshot_taken(std::uint64_t now, std::uint64_t index, std::uint64_t term) {
    _now = now;
    if (index > _applied || (_snapshot && _snapshot->index >= index)) return;
    if (_pending_snapshot && _pending_snapshot->index >= index) return;
    _pending_snapshot = snapshot_meta{index, term, _configuration_index, _options.voters};
    take_pending_snapshot(now);
}

void raft_replica::take_pending_snapshot(std::uint64_t now) {
    // A core restarted after a failed write knows no commit past its
    // snapshot until the leader tells it again, and takes no snapshot past
    // its commit index: until then the replica keeps the entries the core
    // still sends from, and the storage's image is of a later index.
    if (!_pending_snapshot || raft_core_commit_index(_core) < _pending_snapshot->index) return;
    snapshot_meta meta = std::move(*_pending_snapshot);
    _pending_snapshot.reset();
    // The core forgets the terms of entries it covers, bar `trailing`.
    const raft_core_update* update = nullptr;
    const int rv =
        raft_core_take_snapshot(_core, now, meta.index, meta.term, _options.trailing, &update);
    if (rv != RAFT_CORE_OK) return;  // a leader's snapshot is being installed: it supersedes
    _snapshot = std::move(meta);
    absorb(rv, update);
    drop_applied_entries();
}

int raft_replica::entry_callback(void* ctx, std::uint64_t index, raft_core_entry* out) {
    const auto* self = static_cast<const raft_replica*>(ctx);
    const log_entry* e = self->entry_at(index);
    if (e == nullptr) return -1;
    *out = {e->term, type_of(e->kind), e->bytes.data, e->bytes.size};
    return 0;
}

int raft_replica::snapshot_callback(void* ctx, std::uint64_t index, const void** data,
                                    std::size_t* len) {
    auto* self = static_cast<raft_replica*>(ctx);
    auto image = self->_storage.snapshot_image(index);
    if (!image) return -1;
    self->_snapshot_buffer = std::move(*image);
    *data = self->_snapshot_buffer.data();
    *len = self->_snapshot_buffer.size();
    return 0;
}

}  // namespace dstream::replication
