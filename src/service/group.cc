#include "service/group.h"

#include <algorithm>
#include <stdexcept>
#include <variant>

#include "base/binary.h"
#include "service/service_metrics.h"

namespace dstream::service {
namespace {

constexpr auto sweep_interval = std::chrono::seconds(5);
// A sliding TTL counts in seconds: a note per stream every half second keeps
// the leader's view of the last read within that.
constexpr protocol::unix_ms renewal_note_interval = 500;
constexpr std::uint8_t renewal_note = 1;

// leads (1 bit) | leader (16 bits: cluster node ids are at most 65535) | term (47 bits).
constexpr unsigned leader_shift = 47;
constexpr std::uint64_t term_mask = (std::uint64_t{1} << leader_shift) - 1;

std::uint64_t pack(const log::leadership& l) {
    return (std::uint64_t{l.leads()} << 63) | ((l.leader & 0xffff) << leader_shift) |
           (l.term & term_mask);
}

}  // namespace

group::group(std::uint32_t id, group_strand strand, const group_inputs& inputs)
    : _id(id),
      _strand(std::move(strand)),
      _cold(inputs.cold),
      _checkpoints(inputs.checkpoints),
      _clock(inputs.clock),
      _metrics(service_metrics::get()),
      _replica(id, _metrics),
      _reads(_replica.state(), inputs.clock,
             [this](const std::string& key, std::uint64_t incarnation) {
                 _leader.expire(key, incarnation);
             }),
      _leader(_strand, _replica, _reads,
              group_leader::inputs{inputs.clock, inputs.random, _cold, _metrics}),
      _live(*this, inputs.lanes, _metrics),
      _sweep_timer(_strand) {}

void group::attach_log(std::unique_ptr<log::group_log> log, bool hosted) {
    _log = std::move(log);
    _hosted = hosted;
    _standing.store(pack(_log->current()), std::memory_order_relaxed);
    _log->attach(*this);
    _leader.attach_log(*_log);
}

placement group::where() const {
    const std::uint64_t word = _standing.load(std::memory_order_acquire);
    placement p;
    p.group = _id;
    p.hosted = _hosted;
    p.leads = (word >> 63) != 0;
    p.leader = (word >> leader_shift) & 0xffff;
    p.term = word & term_mask;
    return p;
}

read_plan group::read(const read_request& request, std::optional<std::uint64_t> as_source_of) {
    read_plan plan = _reads.read(request, as_source_of);
    if (request.renews_ttl && !as_source_of && !plan.view.refusal &&
        plan.view.expiry.ttl_seconds && !where().leads) {
        tell_renewal(request.key);
    }
    return plan;
}

void group::tell_renewal(const std::string& key) {
    const protocol::unix_ms now = _clock.wall_ms();
    protocol::unix_ms& last = _renewals_told[key];
    if (last != 0 && now - last < renewal_note_interval) return;
    last = now;
    binary_writer note;
    note.put_u8(renewal_note);
    note.put_string(key);
    _log->tell_leader(std::move(note).take());
}

void group::told(std::string_view note) {
    binary_reader in(note);
    std::uint8_t kind = 0;
    std::string key;
    if (!in.get_u8(kind) || kind != renewal_note || !in.get_string(key)) return;
    // The leader's own clock: the note left just now.
    _reads.renewed(key, _clock.wall_ms());
}

void group::catch_up(unique_function<void(bool)> done) {
    _log->catch_up([done = std::move(done)](const log::leadership& /*who*/,
                                                      bool confirmed) mutable { done(confirmed); });
}

void group::restore(state::group_state state, std::uint64_t index, std::uint64_t term) {
    _replica.restore(std::move(state), index, term);
    _checkpoint_index = index;
}

void group::replay(std::uint64_t index, std::uint64_t term, std::string_view bytes) {
    committed(log::committed_entry{index, term, bytes});
    _changed.clear();  // nobody reads yet
}

void group::start() {
    // Reads that renewed a sliding TTL before a restart were not logged:
    // count the restart as a read, so a restart never shortens a life.
    _reads.renew_all(_clock.wall_ms());
    _checkpoint_schedule.started(_replica.applied_index());
    _log->start();
    schedule_sweep();
}

void group::schedule_sweep() {
    _sweep_timer.expires_after(sweep_interval);
    _sweep_timer.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        _leader.sweep();
        if (_checkpoint_schedule.sweep_due(_replica.applied_index())) maybe_checkpoint(true);
        schedule_sweep();
    });
}

void group::committed(const log::committed_entry& entry) {
    const std::unique_ptr<state::command> proposed = _leader.take_proposed(entry.index, entry.term);
    state::command decoded =
        proposed ? state::command{} : _replica.decode(entry.index, entry.bytes);
    state::command& cmd = proposed ? *proposed : decoded;
    // Readers are offered a batch's changes once it is applied; a command
    // that may take a stream's bytes away (a delete, an expiry, a new
    // history) first has the changes before it offered. A follower applies
    // what its leader committed in one batch, and its readers would
    // otherwise find the stream gone and miss bytes whose writer was
    // answered.
    if (!_changed.empty() && !std::holds_alternative<state::append>(cmd.body)) offer_changes();
    group_replica::applied applied =
        _replica.apply(entry.index, entry.term, std::move(cmd), entry.bytes.size());
    const state::apply_result& r = applied.result;
    if (applied.append && r.kind == state::write_kind::appended) {
        _metrics.appends.inc();
        _metrics.appended_bytes.inc(r.next_offset - r.start_offset);
    }
    const bool wakes_readers = r.wakes_readers;
    const bool rewrote_history = r.rewrote_history;
    // The proposer first: a writer never waits for the stream's readers,
    // which are woken once per stream and batch (committed_through).
    _leader.applied(entry.index, entry.term, applied);
    if (rewrote_history) {
        // Every stream has a new token, and a restore replaced them
        // (extensions 2.4): every reader looks again. A restore counts as a
        // read of every stream with a sliding TTL, as a restart does.
        _live.reset();
        _reads.renew_all(_clock.wall_ms());
    }
    if (applied.key.empty()) return;
    if (applied.stream == nullptr) {
        _reads.forget(applied.key);
        _renewals_told.erase(applied.key);
    }
    if (wakes_readers &&
        std::find(_changed.begin(), _changed.end(), applied.key) == _changed.end()) {
        _changed.push_back(std::move(applied.key));
    }
}

void group::committed_through(std::uint64_t /*index*/) {
    offer_changes();
    maybe_checkpoint(false);
}

void group::offer_changes() {
    for (const auto& key : _changed) _live.changed(key);
    _changed.clear();
}

void group::leadership_changed(const log::leadership& now) {
    _standing.store(pack(now), std::memory_order_release);
    _reads.leading(now.leads());
    _leader.leadership_changed(now);
}

void group::proposals_lost(std::uint64_t from_index, const error& why) {
    _leader.proposals_lost(from_index, why);
}

void group::install(std::uint64_t index, std::uint64_t term, std::string_view image) {
    std::uint32_t group_id = 0;
    std::uint64_t image_index = 0;
    auto state = state::group_state::restore_checkpoint(image, group_id, image_index);
    if (!state || group_id != _id || image_index != index) {
        throw std::runtime_error("group " + std::to_string(_id) +
                                 ": the leader's snapshot does not restore");
    }
    _replica.restore(std::move(*state), index, term);
    _checkpoint_index = index;
    _leader.installed(index);
    // Every stream may have changed: every reader looks again.
    _live.reset();
}

void group::maybe_checkpoint(bool swept) {
    if (!_checkpoints.enabled || _checkpointing || _log == nullptr) return;
    const std::uint64_t index = _replica.applied_index();
    if (index == _checkpoint_index) return;
    if (!swept && _replica.applied_bytes_since_snapshot() < _checkpoints.every_bytes) return;
    _checkpointing = true;
    _replica.snapshot_taken();
    _log->save_snapshot(index, _replica.applied_term(), _replica.capture(), [this, index](status st) {
        _checkpointing = false;
        if (!st) {
            _metrics.checkpoint_errors.inc();
            return;
        }
        _metrics.checkpoints_written.inc();
        _checkpoint_index = index;
        _checkpoint_schedule.taken();
    });
}

void group::watch(const read_request& request, const std::shared_ptr<live_signal>& signal) {
    if (_live.stopped()) {
        signal->fire(nullptr);
        return;
    }
    if (_reads.has_news(request)) {
        signal->fire(_reads.live_answer(request));
        return;
    }
    _live.watch(request, signal);
}

void group::follow(read_request request, const std::shared_ptr<live_subscription>& subscription) {
    if (_live.stopped()) {
        subscription->end();
        return;
    }
    if (_reads.has_news(request)) {
        // One update, then the reader reads or follows again.
        if (auto answer = _reads.live_answer(request)) subscription->offer(std::move(answer));
        subscription->end();
        return;
    }
    _live.follow(std::move(request), subscription);
}

group_capture group::capture(const hold_objects_fn& hold) const {
    group_capture c;
    if (!_leader.leads()) {
        c.refusal = make_error(protocol::error_code::no_leader,
                               "this node does not lead the group");
        return c;
    }
    c.index = _replica.applied_index();
    c.term = _replica.applied_term();
    c.history_id = _replica.state().history_id();
    c.streams = _replica.state().stream_count();
    c.image = _replica.capture();
    std::unordered_set<std::string> objects;
    collect_object_keys(objects);
    c.objects.assign(objects.begin(), objects.end());
    std::sort(c.objects.begin(), c.objects.end());
    if (hold) c.hold = hold(c.objects);
    return c;
}

void group::collect_object_keys(std::unordered_set<std::string>& out) const {
    const auto collect = [&](const std::string&, const state::stream& s) {
        for (const auto& c : s.chunks) out.insert(c.object_key);
        if (s.snapshot && !s.snapshot->object_key.empty()) out.insert(s.snapshot->object_key);
    };
    _replica.state().for_each_stream(collect);
    _replica.state().for_each_retired_stream(collect);
}

std::vector<fork_reference> group::fork_references() const {
    std::vector<fork_reference> out;
    const auto collect = [&](const std::string& key, const state::stream& s) {
        for (const auto& [reference, fork] : s.forks) {
            out.push_back(
                fork_reference{fork, state::drop_fork_ref{key, s.incarnation, reference}});
        }
    };
    _replica.state().for_each_stream(collect);
    _replica.state().for_each_retired_stream(collect);
    return out;
}

bool group::holds_fork(const fork_reference& held) const {
    const state::stream* fork = _replica.state().find_any(held.fork_key);
    // By the reference alone: the source's token may have changed since (a
    // history rewrite), the reference never does.
    return fork != nullptr && fork->origin && fork->origin->source_key == held.drop.key &&
           fork->origin->reference == held.drop.reference;
}

}  // namespace dstream::service
