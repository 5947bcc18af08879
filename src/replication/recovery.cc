#include "replication/recovery.h"

#include <stdexcept>
#include <string>

namespace dstream::replication {

group_recovery::group_recovery(std::uint32_t group, std::vector<std::uint64_t> voters)
    : _group(group), _voters(std::move(voters)) {}

void group_recovery::checkpoint(std::uint64_t index, const std::optional<snapshot_header>& header) {
    snapshot_meta meta;
    meta.index = index;
    if (header) {
        meta = header->meta;
        _term = header->term;
        _vote = header->vote;
    } else {
        // Written before the log was a Raft log: a sole voter's, of term 1.
        meta.term = 1;
        meta.configuration_index = 1;
        meta.voters = _voters;
        _term = 1;
    }
    _snapshot = meta;
    _last_index = meta.index;
    _last_term = meta.term;
    _configuration_index = meta.configuration_index;
    _first = meta.index + 1;
}

void group_recovery::record(std::uint64_t index, std::string_view payload, log::wal_payloads kind,
                            const apply_fn& apply) {
    const auto damaged = [&](const std::string& what) {
        return std::runtime_error("group " + std::to_string(_group) + "'s log at index " +
                                  std::to_string(index) + ": " + what);
    };
    if (kind == log::wal_payloads::commands) {
        // A command of the log before it was a Raft log: a sole voter's, of
        // term 1. Its indexes increase but may skip (a batch that failed to
        // persist was cut back, and its indexes never used again).
        if (index <= _last_index) return;  // the checkpoint holds it
        _term = std::max<std::uint64_t>(_term, 1);
        apply(index, 1, payload);
        ++_applied;
        _last_index = index;
        _last_term = 1;
        return;
    }
    auto decoded = decode_raft_record(payload);
    if (!decoded) throw damaged(decoded.err().message);
    switch (decoded->kind) {
        case raft_record_kind::hard_state:
            // Never back: a segment that outlived the checkpoint (it holds
            // another group's records) may hold an older hard state than the
            // checkpoint's. Within a term the vote is only ever cast once.
            if (decoded->term > _term || (decoded->term == _term && _vote == 0)) {
                _term = decoded->term;
                _vote = decoded->vote;
            }
            return;
        case raft_record_kind::snapshot_installed:
            // A leader's snapshot replaced the log before it once its
            // checkpoint, written after this record, was durable. Without
            // one as new (a crash or a failed write between the two), the
            // install did not happen and the log goes on as before it.
            if (!_snapshot || _snapshot->index < index) return;
            _entries.clear();
            _first = _snapshot->index + 1;
            _last_index = std::max(_last_index, _snapshot->index);
            return;
        case raft_record_kind::command:
        case raft_record_kind::barrier:
        case raft_record_kind::configuration:
            entry(index, entry_of(*decoded), apply);
            return;
    }
}

void group_recovery::entry(std::uint64_t index, log_entry e, const apply_fn& apply) {
    if (_snapshot && index <= _snapshot->index) {
        // The checkpoint holds it. Read after entries past the checkpoint,
        // it cut them off when it was written: they were a conflicting
        // suffix, and the checkpoint holds the history that replaced it.
        if (!sole_voter()) {
            _entries.clear();
            _last_index = _snapshot->index;
        }
        return;
    }
    if (sole_voter()) {
        // A sole voter never truncates: its log only grows.
        if (index != _last_index + 1) {
            throw std::runtime_error("group " + std::to_string(_group) + "'s log goes from index " +
                                     std::to_string(_last_index) + " to " +
                                     std::to_string(index));
        }
        if (e.kind == entry_kind::command) {
            apply(index, e.term, e.bytes.view());
            ++_applied;
        }
        if (e.kind == entry_kind::configuration) _configuration_index = index;
        _last_index = index;
        _last_term = e.term;
        return;
    }
    // A later entry at an index the log holds replaces the suffix from it.
    if (index < _first + _entries.size()) {
        if (index < _first) return;
        _entries.resize(index - _first);
    } else if (index != _first + _entries.size()) {
        throw std::runtime_error("group " + std::to_string(_group) + "'s log skips from index " +
                                 std::to_string(_first + _entries.size() - 1) + " to " +
                                 std::to_string(index));
    }
    _entries.push_back(std::move(e));
    _last_index = index;
}

durable_state group_recovery::finish() {
    durable_state out;
    // Nothing, or only a bootstrap whose first entry never became durable:
    // a new group (every voter bootstraps alike).
    if (_last_index == 0) return out;
    out.term = std::max<std::uint64_t>(_term, 1);
    out.vote = _vote;
    if (sole_voter()) {
        // What was applied stands for a snapshot: the state machine holds it.
        out.snapshot = snapshot_meta{_last_index, std::max<std::uint64_t>(_last_term, 1),
                                     std::max<std::uint64_t>(_configuration_index, 1), _voters};
        out.first_index = _last_index + 1;
        return out;
    }
    out.snapshot = _snapshot;
    out.first_index = _first;
    out.entries = std::move(_entries);
    return out;
}

}  // namespace dstream::replication
