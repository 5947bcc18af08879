#include "group_disk.h"

#include <fmt/format.h>

#include "replication/raft_records.h"

namespace dstream::sim {

group_disk::group_disk(node_disk& disk, checker& check, std::uint64_t node, std::uint32_t group,
                       std::uint64_t last_index)
    : _disk(disk), _check(check), _node(node), _group(group), _last_index(last_index) {}

void group_disk::on_report(node_disk::reporter report) {
    _report = std::move(report);
    _disk.attach(_group, [this](std::uint64_t token, bool ok) { reported(token, ok); });
}

void group_disk::reported(std::uint64_t token, bool ok) {
    if (_install && _install->token <= token) {
        // As wal_group_disk: the checkpoint once the record is durable.
        if (ok) ok = _disk.write_checkpoint(_group, std::move(_install->checkpoint));
        _install.reset();
    }
    if (_report) _report(token, ok);
}

void group_disk::start_view(const replication::durable_state& state) {
    if (state.snapshot) {
        const auto chain = _check.committed_chain(_group, state.snapshot->index);
        if (!chain) {
            _check.fail("state machine safety",
                        fmt::format("g{}: n{} restarts from a snapshot at index {} that no "
                                    "replica applied",
                                    _group, _node, state.snapshot->index));
        }
        _view.reset(state.snapshot->index, chain.value_or(0));
    } else {
        _view.reset(state.first_index - 1, 0);
    }
    std::uint64_t index = state.first_index;
    for (const auto& e : state.entries) {
        if (index > _view.base_index()) {
            const auto chain = _view.put(index, e.term, static_cast<int>(e.kind), e.bytes.view());
            if (chain) _check.entry_written(_node, _group, index, e.term, *chain);
        }
        ++index;
    }
}

void group_disk::write_hard_state(std::uint64_t token, std::uint64_t term, std::uint64_t vote) {
    _last_token = token;
    // As wal_group_disk: indexed past the last entry, so that the segment
    // holding it outlives every checkpoint older than it.
    _disk.submit(_group, _last_index + 1, replication::encode_hard_state_record(term, vote), token);
}

void group_disk::write_entry(std::uint64_t token, std::uint64_t index,
                             const replication::log_entry& entry) {
    _last_token = token;
    _last_index = index;
    const auto chain = _view.put(index, entry.term, static_cast<int>(entry.kind), entry.bytes.view());
    if (!chain) {
        _check.fail("log model", fmt::format("g{}: n{} wrote index {} outside its log {}..{}",
                                             _group, _node, index, _view.base_index() + 1,
                                             _view.last_index()));
    } else {
        _check.entry_written(_node, _group, index, entry.term, *chain);
    }
    _disk.submit(_group, index, replication::encode_entry_record(entry).joined(), token);
}

void group_disk::write_snapshot(std::uint64_t token, const replication::snapshot_record& record,
                                std::string_view image) {
    const replication::snapshot_meta& meta = record.meta;
    _last_token = token;
    const auto chain = _check.committed_chain(_group, meta.index);
    if (!chain) {
        _check.fail("state machine safety",
                    fmt::format("g{}: n{} is sent a snapshot at index {} that no replica applied",
                                _group, _node, meta.index));
    }
    _before_install = _view;
    _view.reset(meta.index, chain.value_or(0));
    _last_index = meta.index;
    // As wal_group_disk: the record that says the log before it is the
    // snapshot's, durably, then the checkpoint.
    _install = pending_install{
        token, node_disk::checkpoint{
                   meta.index, replication::encode_snapshot_header(meta, record.term, record.vote),
                   std::string(image)}};
    _disk.submit(_group, meta.index, replication::encode_snapshot_installed_record(meta.term),
                 token);
}

void group_disk::restarted(std::uint64_t last) {
    if (_before_install && last != _view.last_index()) _view = *_before_install;
    _before_install.reset();
    if (last > _view.last_index()) {
        // Only a snapshot of entries that were not durable would take it there.
        _check.fail("log model", fmt::format("g{}: n{} restarted with its log at {}, past the "
                                             "last entry it wrote ({})",
                                             _group, _node, last, _view.last_index()));
        return;
    }
    _view.truncate_after(last);
}

std::optional<std::string> group_disk::snapshot_image(std::uint64_t index) {
    const node_disk::checkpoint* newest = _disk.newest_checkpoint(_group);
    if (newest == nullptr || newest->index != index) return std::nullopt;
    return newest->image;
}

void group_disk::save_snapshot(const replication::snapshot_meta& meta, std::uint64_t term,
                               std::uint64_t vote, const state::checkpoint_image& image,
                               std::function<void(bool)> done) {
    node_disk::checkpoint c{meta.index, replication::encode_snapshot_header(meta, term, vote),
                            state::sealed_checkpoint_bytes(image)};
    _disk.save_checkpoint(_group, std::move(c), std::move(done));
}

}  // namespace dstream::sim
