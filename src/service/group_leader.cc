#include "service/group_leader.h"

#include <algorithm>
#include <memory>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "protocol/digest.h"
#include "service/service_metrics.h"

namespace dstream::service {
namespace {

using protocol::error_code;

// A write proposed before the leadership changed may or may not apply
// (extensions 11.1: unknown).
error outcome_unknown() {
    return make_error(error_code::outcome_unknown,
                      "the write's outcome is unknown: the group's leadership changed");
}

}  // namespace

group_leader::group_leader(group_strand strand, group_replica& replica, group_reads& reads,
                           inputs in)
    : _strand(std::move(strand)),
      _replica(replica),
      _reads(reads),
      _clock(in.clock),
      _random(in.random),
      _cold(in.cold),
      _metrics(in.metrics),
      _flush_backoff(in.cold.flush_retry_base, in.cold.flush_retry_cap) {}

void group_leader::submit(state::command_body&& body, write_done done) {
    queue(submission{std::move(body), std::move(done), false});
}

void group_leader::submit_from_request(state::command_body&& body, write_done done) {
    if (_strand.running_in_this_thread()) {
        propose(std::move(body), std::move(done));
    } else {
        submit(std::move(body), std::move(done));
    }
}

void group_leader::submit_via_leader(state::command_body&& body, write_done done) {
    queue(submission{std::move(body), std::move(done), true});
}

void group_leader::queue(submission&& s) {
    bool post = false;
    {
        std::lock_guard lock(_submitted_mutex);
        _submitted.push_back(std::move(s));
        post = !std::exchange(_submitted_posted, true);
    }
    if (post) boost::asio::post(_strand, [this] { propose_submitted(); });
}

void group_leader::propose_submitted() {
    {
        std::lock_guard lock(_submitted_mutex);
        std::swap(_submitted, _proposing);
        _submitted_posted = false;
    }
    for (auto& s : _proposing) {
        if (s.via_leader && !_leadership.leads()) {
            forward(std::move(s.body), std::move(s.done));
        } else {
            propose(std::move(s.body), std::move(s.done));
        }
    }
    _proposing.clear();
}

void group_leader::forward(state::command_body&& body, write_done done) {
    if (_log == nullptr) {
        refuse(done, not_leading());
        return;
    }
    const auto now = _clock.wall_ms();
    _log->forward(state::encode_command(now, body),
                  [this, done = std::move(done)](log::proposal p) mutable {
                      switch (p.what) {
                          case log::proposal::outcome::accepted:
                              await_entry(p.index, p.term, std::move(done));
                              return;
                          case log::proposal::outcome::refused:
                              refuse(done, p.refusal.value_or(not_leading()));
                              return;
                          case log::proposal::outcome::not_leader:
                              refuse(done, not_leading());
                              return;
                      }
                  });
}

void group_leader::await_entry(std::uint64_t index, std::uint64_t term, write_done done) {
    // Applied here already (another leader told this replica of the commit
    // before the answer came), or behind an entry that waits: its apply's
    // answer is not known, only that it may have happened.
    if (index <= _replica.applied_index() || (!_pending.empty() && _pending.back().index >= index)) {
        refuse(done, outcome_unknown());
        return;
    }
    _pending.push_back(pending_entry{index, term, std::move(done), nullptr});
}

error group_leader::not_leading() const {
    return make_error(error_code::no_leader, "this node does not lead the stream's group");
}

void group_leader::answer(write_done& done, state::apply_result&& r) {
    if (done) done(std::move(r));
}

void group_leader::refuse(write_done& done, const error& why) {
    state::apply_result refused;
    refused.refusal = why;
    answer(done, std::move(refused));
}

void group_leader::propose(state::command_body&& body, write_done done) {
    if (!_leadership.leads() || _log == nullptr) {
        refuse(done, not_leading());
        return;
    }
    if (auto refusal = cold_backpressure(body)) {
        refuse(done, *refusal);
        return;
    }
    auto* publish = std::get_if<state::publish_snapshot>(&body);
    if (publish != nullptr && _cold.enabled() && publish->body.size() >= snapshot_inline_limit) {
        // Two steps, like a chunk: the object first, then the command that
        // references it; a crash between them leaves an orphan for the sweep.
        const state::stream* s = _replica.state().find(publish->key);
        publish->object_key =
            snapshot_object_key(publish->key, s ? s->incarnation : 0, publish->offset,
                                protocol::to_hex(publish->digest));
        auto job = std::make_shared<std::pair<state::command_body, write_done>>(std::move(body),
                                                                                std::move(done));
        boost::asio::post(_cold.io, [this, job] {
            auto& p = std::get<state::publish_snapshot>(job->first);
            const status written = _cold.store->put(p.object_key, p.body);
            boost::asio::post(_strand, [this, job, written] {
                if (!written) {
                    refuse(job->second, written.err());
                    return;
                }
                std::get<state::publish_snapshot>(job->first).body.clear();
                propose(std::move(job->first), std::move(job->second));
            });
        });
        return;
    }
    const auto now = _clock.wall_ms();
    if (const std::string* key = state::command_key(body)) _reads.live_stream(*key, now);
    const log::proposal p = _log->propose(state::encode_command(now, body));
    switch (p.what) {
        case log::proposal::outcome::accepted: {
            pending_entry entry{p.index, p.term, std::move(done), nullptr};
            if (std::holds_alternative<state::append>(body)) {
                entry.proposed = std::make_unique<state::command>(now, std::move(body));
            }
            _pending.push_back(std::move(entry));
            return;
        }
        case log::proposal::outcome::refused:
            refuse(done, p.refusal.value_or(not_leading()));
            return;
        case log::proposal::outcome::not_leader:
            refuse(done, not_leading());
            return;
    }
}

std::optional<error> group_leader::cold_backpressure(const state::command_body& body) {
    if (!_cold.enabled()) return std::nullopt;
    std::uint64_t adds = 0;
    if (const auto* a = std::get_if<state::append>(&body)) adds = a->body.size();
    if (const auto* c = std::get_if<state::create_stream>(&body)) adds = c->body.size();
    const std::uint64_t hot = _replica.hot_bytes();
    const std::uint64_t budget = _cold.group_hot_budget;
    if (adds == 0) return std::nullopt;
    // While the store fails nothing leaves memory: the budget is the bound.
    // Otherwise a group past its budget has flushes under way; once one is
    // slow, the store is not keeping up (or is out and not yet known to be,
    // its calls still retrying), and twice the budget is the bound.
    const bool failing = _flush_backoff.failing();
    if (failing ? hot + adds <= budget
                : hot <= budget || hot + adds <= 2 * budget || !flush_is_slow())
        return std::nullopt;
    _metrics.cold_backpressure_refusals.inc();
    return make_error(error_code::cold_backpressure,
                      failing ? "the cold store is unavailable and the node holds all the "
                                "unflushed bytes it may; retry later"
                              : "the cold store takes the bytes slower than they come and the "
                                "node holds all the unflushed bytes it may; retry later");
}

void group_leader::applied(std::uint64_t index, std::uint64_t term,
                           group_replica::applied& applied) {
    state::apply_result& r = applied.result;
    // What the follow-ups need, taken before the result goes to its proposer.
    std::vector<std::string> garbage = std::move(r.garbage_objects);
    const std::optional<state::fork_origin> released = std::move(r.released);
    const bool wakes_readers = r.wakes_readers;
    // Proposals at lower indexes were overwritten by entries that are no
    // command (a new leader's barrier): never applied, and never will be.
    while (!_pending.empty() && _pending.front().index < index) {
        refuse(_pending.front().done, not_leading());
        _pending.pop_front();
    }
    if (!_pending.empty() && _pending.front().index == index) {
        pending_entry entry = std::move(_pending.front());
        _pending.pop_front();
        if (entry.term == term) {
            answer(entry.done, std::move(r));
        } else {
            // Another leader's entry holds the index: this proposal is gone.
            refuse(entry.done, not_leading());
        }
    }
    if (!_leadership.leads()) return;
    if (!garbage.empty()) remove_garbage(garbage);
    if (released && _forward) {
        // Cross-group by message: the source's group drops the reference.
        _forward(state::drop_fork_ref{released->source_key, released->source_incarnation,
                                      released->reference});
    }
    if (applied.key.empty()) return;
    const state::stream* s = applied.stream;
    if (s == nullptr) {
        _expiring.erase(applied.key);
        return;
    }
    if (wakes_readers) {
        maybe_flush(applied.key, *s);
        relieve_memory_pressure();
    }
}

std::unique_ptr<state::command> group_leader::take_proposed(std::uint64_t index,
                                                            std::uint64_t term) {
    if (_pending.empty() || _pending.front().index != index || _pending.front().term != term) {
        return nullptr;
    }
    return std::move(_pending.front().proposed);
}

void group_leader::proposals_lost(std::uint64_t from_index, const error& why) {
    // The queue is in index order; what was lost is its back.
    reusable_queue<pending_entry> kept;
    while (!_pending.empty()) {
        pending_entry entry = std::move(_pending.front());
        _pending.pop_front();
        if (entry.index >= from_index) {
            refuse(entry.done, why);
        } else {
            kept.push_back(std::move(entry));
        }
    }
    std::swap(_pending, kept);
}

void group_leader::installed(std::uint64_t index) {
    // The snapshot may or may not hold them (extensions 11.1: unknown).
    while (!_pending.empty() && _pending.front().index <= index) {
        refuse(_pending.front().done, outcome_unknown());
        _pending.pop_front();
    }
}

void group_leader::leadership_changed(const log::leadership& now) {
    const bool was_leader = _leadership.leads();
    _leadership = now;
    if (!now.leads()) {
        // extensions 5.7: what it proposed may still commit under another
        // leader, or never: unknown, answered now rather than whenever this
        // replica (cut off, perhaps) applies again.
        while (!_pending.empty()) {
            refuse(_pending.front().done, outcome_unknown());
            _pending.pop_front();
        }
        // The jobs stop here; flushes in flight end as refused commands.
        _expiring.clear();
        if (_flush_backoff.failing()) _metrics.groups_cold_failing.add(-1);
        _flush_backoff.clear();
        return;
    }
    if (was_leader) return;
    // A new group draws its history id once, as its first command.
    if (_replica.state().history_id() == 0) {
        std::uint64_t id = 0;
        while (id == 0) id = _random.next();
        propose(state::init_group{id}, {});
    }
    relieve_memory_pressure();
}

void group_leader::expire(const std::string& key, std::uint64_t incarnation) {
    if (!_leadership.leads() || !_expiring.insert(key).second) return;
    propose(state::expire_stream{key, incarnation}, {});
}

void group_leader::sweep() {
    if (!_leadership.leads()) return;
    for (const auto& [key, incarnation] : _reads.expired_streams(_clock.wall_ms())) {
        expire(key, incarnation);
    }
    if (_flush_backoff.failing()) {
        resume_flushes();
    } else {
        relieve_memory_pressure();
    }
}

void group_leader::remove_garbage(const std::vector<std::string>& objects) {
    if (!_cold.enabled()) return;
    boost::asio::post(_cold.io, [cold = _cold, garbage = objects] {
        for (const auto& object_key : garbage) {
            cold.cache->erase(object_key);
            (void)cold.store->remove(object_key);
        }
    });
}

bool group_leader::may_flush() const {
    return _cold.enabled() && _flush_backoff.may_start(_clock.monotonic_ms());
}

void group_leader::maybe_flush(const std::string& key, const state::stream& s) {
    if (!may_flush() || _flushing.contains(key)) return;
    const std::uint64_t grid_end = (s.cold_end() / _cold.chunk_bytes + 1) * _cold.chunk_bytes;
    if (s.tail() >= grid_end) start_flush(key, s, grid_end);
}

void group_leader::resume_flushes() {
    if (!may_flush() || !_leadership.leads()) return;
    _replica.state().for_each_stream(
        [this](const std::string& key, const state::stream& s) { maybe_flush(key, s); });
    relieve_memory_pressure();
}

void group_leader::relieve_memory_pressure() {
    // After each append: flushes in flight that bring the group under its
    // budget make it a comparison.
    const std::uint64_t hot = _replica.hot_bytes();
    if (hot <= _cold.group_hot_budget + std::min(hot, _flushing_bytes)) return;
    if (!may_flush() || !_leadership.leads()) return;
    // Flush the largest hot tails whole until the group is back under half
    // its budget (counting flushes already in flight as done).
    std::vector<std::pair<std::uint64_t, const std::string*>> candidates;
    std::uint64_t in_flight = 0;
    _replica.state().for_each_stream([&](const std::string& key, const state::stream& s) {
        if (_flushing.contains(key)) {
            in_flight += s.hot_bytes_held();
        } else if (s.hot_bytes_held() > 0) {
            candidates.emplace_back(s.hot_bytes_held(), &key);
        }
    });
    // Largest first; ties by key, so every leader picks alike.
    std::sort(candidates.begin(), candidates.end(), [](const auto& a, const auto& b) {
        return a.first != b.first ? a.first > b.first : *a.second < *b.second;
    });
    std::uint64_t remaining = hot - std::min(hot, in_flight);
    for (const auto& [held, key] : candidates) {
        if (remaining <= _cold.group_hot_budget / 2) break;
        const state::stream* s = _replica.state().find(*key);
        start_flush(*key, *s, s->tail());
        remaining -= held;
    }
}

void group_leader::start_flush(const std::string& key, const state::stream& s,
                               std::uint64_t end) {
    const std::uint64_t start = s.cold_end();
    std::vector<byte_slice> slices;
    s.bytes.read(start, end - start, slices);
    _flushing.emplace(key, flush_in_flight{end - start, _clock.monotonic_ms()});
    _flushing_bytes += end - start;
    flush_chunk_job job{key,
                        s.incarnation,
                        start,
                        end,
                        chunk_object_key(key, s.incarnation, start, end),
                        std::move(slices)};
    boost::asio::post(_cold.io, [this, job = std::move(job)]() mutable {
        std::string bytes;
        bytes.reserve(job.end - job.start);
        for (const auto& slice : job.slices) bytes.append(slice.data, slice.size);
        job.slices.clear();
        const status written = _cold.store->put(job.object_key, bytes);
        boost::asio::post(_strand, [this, job = std::move(job), written]() mutable {
            finish_flush(std::move(job), written);
        });
    });
}

void group_leader::flush_ended(const std::string& key) {
    const auto it = _flushing.find(key);
    if (it == _flushing.end()) return;
    _flushing_bytes -= it->second.bytes;
    _flushing.erase(it);
}

void group_leader::flush_next(const std::string& key) {
    // Flushes of a stream go one at a time: what came while one ran goes
    // now, not at the next append, so a writer faster than the store finds
    // the backlog moving at the store's pace (and a flush slow once it lags).
    if (!_leadership.leads()) return;
    if (const state::stream* s = _replica.state().find(key)) maybe_flush(key, *s);
    relieve_memory_pressure();
}

bool group_leader::flush_is_slow() const {
    const std::uint64_t now = _clock.monotonic_ms();
    const auto slow = static_cast<std::uint64_t>(_cold.slow_flush.count());
    return std::any_of(_flushing.begin(), _flushing.end(),
                       [&](const auto& f) { return now - f.second.started_ms >= slow; });
}

void group_leader::finish_flush(flush_chunk_job job, const status& written) {
    if (!written) {
        flush_ended(job.key);
        if (!_flush_backoff.failing()) {
            _metrics.groups_cold_failing.add(1);
            spdlog::error(
                "cold store: a chunk flush failed; the bytes stay in memory, flushes back off, "
                "and writes past the hot budget are refused with 503 COLD_BACKPRESSURE");
        }
        _metrics.cold_flush_failures.inc();
        _flush_backoff.failed(_clock.monotonic_ms(), _random);
        return;
    }
    if (_flush_backoff.failing()) {
        _metrics.groups_cold_failing.add(-1);
        spdlog::info("cold store: a chunk flush succeeded again; flushing resumes");
        _flush_backoff.clear();
        resume_flushes();
    }
    state::flush_chunk cmd{job.key, job.incarnation, job.start, job.end, job.object_key};
    propose(std::move(cmd),
            [this, key = job.key, object_key = job.object_key](state::apply_result r) {
                if (!r.refusal) {
                    flush_ended(key);
                    flush_next(key);
                    return;
                }
                // The object is garbage: the stream changed under the flush (deleted,
                // recreated), or the log refused the command (a full disk, a lost
                // leadership). In the former cases the bytes are still to flush and the
                // next flush writes the very same key: it waits until this removal is
                // done, or the removal could take the object the log then references.
                // A lost leadership keeps the object: the command may have applied
                // (unknown), or another leader may flush the same range under the same
                // key; the orphan sweep removes it if nothing references it.
                if (r.refusal->code == error_code::outcome_unknown ||
                    r.refusal->code == error_code::no_leader) {
                    flush_ended(key);
                    return;
                }
                boost::asio::post(_cold.io, [this, key, object_key] {
                    (void)_cold.store->remove(object_key);
                    boost::asio::post(_strand, [this, key] { flush_ended(key); });
                });
            });
}

}  // namespace dstream::service
