#include "sim_group.h"

#include <fmt/format.h>

#include "digest.h"
#include "service/service_metrics.h"

namespace dstream::sim {
namespace {

std::uint64_t digest_of(const state::checkpoint_image& image) {
    std::uint64_t h = fnv1a({});
    for (const auto& piece : image.pieces) h = fnv1a(piece.view(), h);
    return h;
}

}  // namespace

sim_group::sim_group(std::uint32_t id, inputs in)
    : _id(id),
      _in(std::move(in)),
      _replica(id, service::service_metrics::get()),
      _reads(_replica.state(), _in.clock,
             [this](const std::string& key, std::uint64_t incarnation) {
                 _leader.expire(key, incarnation);
             }),
      _leader(_in.strand, _replica, _reads,
              service::group_leader::inputs{_in.clock, _in.random, _cold,
                                            service::service_metrics::get()}) {}

void sim_group::attach_log(log::group_log& log) {
    _log = &log;
    _log->attach(*this);
    _leader.attach_log(log);
}

std::uint64_t sim_group::digest() const { return digest_of(_replica.capture()); }

void sim_group::restore(state::group_state state, std::uint64_t index, std::uint64_t term) {
    _replica.restore(std::move(state), index, term);
    _checkpoint_index = index;
    _in.check.state_at(_in.node, _id, index, digest());
}

void sim_group::submit(state::command_body body, service::write_done done) {
    _leader.propose(std::move(body), std::move(done));
}

void sim_group::committed(const log::committed_entry& entry) {
    // As service::group does: the proposer applies the append it proposed,
    // every other replica the decoded entry, and the checker compares them.
    const std::unique_ptr<state::command> proposed = _leader.take_proposed(entry.index, entry.term);
    state::command decoded =
        proposed ? state::command{} : _replica.decode(entry.index, entry.bytes);
    service::group_replica::applied applied = _replica.apply(
        entry.index, entry.term, std::move(proposed ? *proposed : decoded), entry.bytes.size());
    _leader.applied(entry.index, entry.term, applied);
    ++_since_checkpoint;
    if (entry.index % _in.digest_every == 0) _in.check.state_at(_in.node, _id, entry.index, digest());
}

void sim_group::committed_through(std::uint64_t /*index*/) { maybe_checkpoint(); }

void sim_group::maybe_checkpoint() {
    if (_checkpointing || _log == nullptr || _since_checkpoint < _in.checkpoint_every) return;
    const std::uint64_t index = _replica.applied_index();
    if (index == _checkpoint_index) return;
    _checkpointing = true;
    _since_checkpoint = 0;
    state::checkpoint_image image = _replica.capture();
    _in.check.state_at(_in.node, _id, index, digest_of(image));
    _log->save_snapshot(index, _replica.applied_term(), std::move(image),
                        [this, index](status st) {
                            _checkpointing = false;
                            if (st) _checkpoint_index = index;
                        });
}

void sim_group::leadership_changed(const log::leadership& now) { _leader.leadership_changed(now); }

void sim_group::proposals_lost(std::uint64_t from_index, const error& why) {
    _leader.proposals_lost(from_index, why);
}

void sim_group::install(std::uint64_t index, std::uint64_t term, std::string_view image) {
    std::uint32_t group_id = 0;
    std::uint64_t image_index = 0;
    auto restored = state::group_state::restore_checkpoint(image, group_id, image_index);
    if (!restored || group_id != _id || image_index != index) {
        _in.check.fail("snapshot install",
                       fmt::format("g{}: n{}: the leader's snapshot at index {} does not restore{}",
                                   _id, _in.node, index,
                                   restored ? std::string() : ": " + restored.err().message));
        return;
    }
    _replica.restore(std::move(*restored), index, term);
    _checkpoint_index = index;
    _since_checkpoint = 0;
    _leader.installed(index);
    _in.check.state_at(_in.node, _id, index, digest());
}

}  // namespace dstream::sim
