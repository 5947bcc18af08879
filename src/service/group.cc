#include "service/group.h"

#include <algorithm>
#include <random>
#include <stdexcept>

#include <spdlog/spdlog.h>

#include "protocol/digest.h"
#include "runtime/clock.h"
#include "service/service_metrics.h"

namespace dstream::service {
namespace {

using protocol::error_code;

constexpr auto sweep_interval = std::chrono::seconds(5);

}  // namespace

group::group(std::uint32_t id, group_strand strand, cold_tier cold, checkpointing checkpoints,
             runtime::fanout_lanes& lanes)
    : _id(id),
      _strand(std::move(strand)),
      _cold(std::move(cold)),
      _checkpoints(checkpoints),
      _live(*this, lanes, service_metrics::get()),
      _sweep_timer(_strand),
      _metrics(service_metrics::get()) {}

void group::report(std::int64_t streams_delta, std::int64_t hot_bytes_delta) {
    _metrics.streams.add(streams_delta);
    _metrics.hot_bytes.add(hot_bytes_delta);
}

void group::attach_log(std::unique_ptr<log::command_log> log) {
    _log = std::move(log);
    _log->on_durable([this](std::uint64_t index, status st) { on_durable(index, st); });
}

void group::restore(state::group_state state, std::uint64_t index) {
    const auto streams_before = static_cast<std::int64_t>(_state.stream_count());
    const auto hot_before = static_cast<std::int64_t>(_hot_bytes);
    _state = std::move(state);
    _applied_index = _checkpoint_index = index;
    _hot_bytes = 0;
    const auto count = [&](const std::string&, const state::stream& s) {
        _hot_bytes += s.hot_bytes_held();
    };
    _state.for_each_stream(count);
    _state.for_each_retired_stream(count);
    report(static_cast<std::int64_t>(_state.stream_count()) - streams_before,
           static_cast<std::int64_t>(_hot_bytes) - hot_before);
}

bool group::replay(std::uint64_t index, std::string_view record) {
    if (index <= _checkpoint_index) return false;
    auto cmd = state::decode_command(record);
    if (!cmd) {
        throw std::runtime_error("undecodable command at index " + std::to_string(index) +
                                 " of a group's log: " + cmd.err().message);
    }
    (void)apply_and_follow(*cmd, index);
    return true;
}

void group::start() {
    // Reads that renewed a sliding TTL before a restart were not logged: count
    // the restart as a read, so a restart never shortens a stream's life.
    const auto now = runtime::now_unix_ms();
    _state.for_each_stream([&](const std::string& key, const state::stream& s) {
        if (s.expiry.ttl_seconds) _last_read_ms[key] = now;
    });
    if (_state.history_id() == 0) {
        std::random_device rd;
        std::uint64_t id = 0;
        while (id == 0) id = (std::uint64_t{rd()} << 32) ^ rd();
        append_to_log(state::command{runtime::now_unix_ms(), state::init_group{id}}, {});
    }
    schedule_sweep();
}

void group::schedule_sweep() {
    _sweep_timer.expires_after(sweep_interval);
    _sweep_timer.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        const auto now = runtime::now_unix_ms();
        std::vector<std::string> due;
        _state.for_each_stream([&](const std::string& key, const state::stream& s) {
            if (lifetime_over(key, s, now)) due.push_back(key);
        });
        for (const auto& key : due) live_stream(key, now);
        relieve_memory_pressure();
        maybe_checkpoint(true);
        schedule_sweep();
    });
}

bool group::lifetime_over(const std::string& key, const state::stream& s,
                          protocol::unix_ms now) const {
    if (s.expiry.expires_at) return now >= *s.expiry.expires_at;
    if (s.expiry.ttl_seconds) {
        protocol::unix_ms last = s.last_write_ms;
        if (auto it = _last_read_ms.find(key); it != _last_read_ms.end()) {
            last = std::max(last, it->second);
        }
        return now >= last + static_cast<protocol::unix_ms>(*s.expiry.ttl_seconds) * 1000;
    }
    return false;
}

const state::stream* group::live_stream(const std::string& key, protocol::unix_ms now) {
    const state::stream* s = _state.find(key);
    if (s == nullptr || !lifetime_over(key, *s, now)) return s;
    if (_expiring.insert(key).second) {
        append_to_log(state::command{now, state::expire_stream{key, s->incarnation}}, {});
    }
    return nullptr;
}

void group::submit(state::command_body body, write_done done) {
    bool post = false;
    {
        std::lock_guard lock(_submitted_mutex);
        _submitted.push_back(submission{std::move(body), std::move(done)});
        post = !std::exchange(_submitted_posted, true);
    }
    if (post) boost::asio::post(_strand, [this] { propose_submitted(); });
}

void group::propose_submitted() {
    {
        std::lock_guard lock(_submitted_mutex);
        std::swap(_submitted, _proposing);
        _submitted_posted = false;
    }
    for (auto& s : _proposing) propose(std::move(s.body), std::move(s.done));
    _proposing.clear();
}

void group::propose(state::command_body body, write_done done) {
    auto* publish = std::get_if<state::publish_snapshot>(&body);
    if (publish != nullptr && _cold.enabled() && publish->body.size() >= snapshot_inline_limit) {
        // Two steps, like a chunk: the object first, then the command that
        // references it; a crash between them leaves an orphan for the sweep.
        const state::stream* s = _state.find(publish->key);
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
                    state::apply_result failed;
                    failed.refusal = written.err();
                    if (job->second) job->second(std::move(failed));
                    return;
                }
                std::get<state::publish_snapshot>(job->first).body.clear();
                propose(std::move(job->first), std::move(job->second));
            });
        });
        return;
    }
    const auto now = runtime::now_unix_ms();
    if (const std::string* key = state::command_key(body)) live_stream(*key, now);
    append_to_log(state::command{now, std::move(body)}, std::move(done));
}

void group::append_to_log(state::command cmd, write_done done) {
    std::string record = state::encode_command(cmd);
    _logged_since_checkpoint += record.size();
    const std::uint64_t index = _log->append(std::move(record));
    _pending.push_back(pending_entry{index, std::move(cmd), std::move(done)});
}

void group::on_durable(std::uint64_t index, const status& st) {
    while (!_pending.empty() && _pending.front().index <= index) {
        pending_entry entry = std::move(_pending.front());
        _pending.pop_front();
        if (!st) {
            if (entry.done) {
                state::apply_result refused;
                refused.refusal = st.err();
                entry.done(std::move(refused));
            }
            continue;
        }
        state::apply_result r = apply_and_follow(entry.cmd, entry.index);
        if (r.kind == state::write_kind::appended &&
            std::holds_alternative<state::append>(entry.cmd.body)) {
            _metrics.appends.inc();
            _metrics.appended_bytes.inc(r.next_offset - r.start_offset);
        }
        if (std::string* key = state::command_key(entry.cmd.body); key && r.wakes_readers) {
            if (std::find(_changed.begin(), _changed.end(), *key) == _changed.end()) {
                _changed.push_back(std::move(*key));  // the command is done with
            }
        }
        if (r.released && _forward) {
            // Cross-group by message: the source's group drops the reference.
            _forward(state::drop_fork_ref{r.released->source_key, r.released->source_incarnation,
                                          r.released->reference});
        }
        if (entry.done) entry.done(std::move(r));
    }
    // The proposers are answered first: a writer never waits for the
    // stream's readers, which are woken once per stream and batch.
    for (const auto& key : _changed) _live.changed(key);
    _changed.clear();
    relieve_memory_pressure();
    maybe_checkpoint(false);
}

void group::maybe_checkpoint(bool idle) {
    if (_checkpoints.files == nullptr || _checkpointing || _applied_index == _checkpoint_index)
        return;
    // Checkpoint after enough log, or on an idle sweep so restarts stay fast.
    if (!idle && _logged_since_checkpoint < _checkpoints.every_bytes) return;
    _checkpointing = true;
    _logged_since_checkpoint = 0;
    const std::uint64_t index = _applied_index;
    auto image = std::make_shared<state::checkpoint_image>(_state.capture_checkpoint(_id, index));
    boost::asio::post(_cold.io, [this, index, image] {
        const status written = _checkpoints.files->write(_id, index, *image);
        // Here, not on the strand: dropping the covered log deletes whole
        // WAL segments, about 10 ms per 32 MiB file on ext4, which would
        // stall an I/O thread and every connection it serves.
        if (written) _log->release(index);
        boost::asio::post(_strand, [this, index, written] {
            _checkpointing = false;
            if (!written) {
                _metrics.checkpoint_errors.inc();
                return;
            }
            _metrics.checkpoints_written.inc();
            _checkpoint_index = index;
        });
    });
}

state::apply_result group::apply_and_follow(const state::command& cmd, std::uint64_t index) {
    const std::string* key = state::command_key(cmd.body);
    std::uint64_t held_before = 0;
    if (key != nullptr) {
        if (const state::stream* s = _state.find_any(*key)) held_before = s->hot_bytes_held();
    }
    const auto streams_before = static_cast<std::int64_t>(_state.stream_count());
    state::apply_result r = _state.apply(cmd, index);
    _applied_index = index;
    if (key == nullptr) return r;

    const state::stream* held = _state.find_any(*key);
    const std::uint64_t held_after = held ? held->hot_bytes_held() : 0;
    _hot_bytes = _hot_bytes - held_before + held_after;
    report(static_cast<std::int64_t>(_state.stream_count()) - streams_before,
           static_cast<std::int64_t>(held_after) - static_cast<std::int64_t>(held_before));
    const state::stream* s = _state.find(*key);
    if (s == nullptr) {
        _last_read_ms.erase(*key);
        _expiring.erase(*key);
    }
    if (!r.garbage_objects.empty() && _cold.enabled()) {
        boost::asio::post(_cold.io, [cold = _cold, garbage = r.garbage_objects] {
            for (const auto& object_key : garbage) {
                cold.cache->erase(object_key);
                (void)cold.store->remove(object_key);
            }
        });
    }
    if (s != nullptr && r.wakes_readers && _log) maybe_flush(*key, *s);
    return r;
}

void group::maybe_flush(const std::string& key, const state::stream& s) {
    if (!_cold.enabled() || _flushing.contains(key)) return;
    const std::uint64_t grid_end = (s.cold_end() / _cold.chunk_bytes + 1) * _cold.chunk_bytes;
    if (s.tail() >= grid_end) start_flush(key, s, grid_end);
}

void group::relieve_memory_pressure() {
    if (!_cold.enabled() || _hot_bytes <= _cold.group_hot_budget) return;
    // Flush the largest hot tails whole until the group is back under half
    // its budget (counting flushes already in flight as done).
    std::vector<std::pair<std::uint64_t, const std::string*>> candidates;
    std::uint64_t in_flight = 0;
    _state.for_each_stream([&](const std::string& key, const state::stream& s) {
        if (_flushing.contains(key)) {
            in_flight += s.hot_bytes_held();
        } else if (s.hot_bytes_held() > 0) {
            candidates.emplace_back(s.hot_bytes_held(), &key);
        }
    });
    std::sort(candidates.begin(), candidates.end(), std::greater<>());
    std::uint64_t remaining = _hot_bytes - std::min(_hot_bytes, in_flight);
    for (const auto& [held, key] : candidates) {
        if (remaining <= _cold.group_hot_budget / 2) break;
        const state::stream* s = _state.find(*key);
        start_flush(*key, *s, s->tail());
        remaining -= held;
    }
}

void group::start_flush(const std::string& key, const state::stream& s, std::uint64_t end) {
    const std::uint64_t start = s.cold_end();
    std::vector<storage::byte_slice> slices;
    s.bytes.read(start, end - start, slices);
    _flushing.insert(key);
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

void group::finish_flush(flush_chunk_job job, const status& written) {
    if (!written) {
        _flushing.erase(job.key);
        spdlog::error(
            "chunk flush of a stream failed; its bytes stay in memory and the flush is retried");
        return;
    }
    state::flush_chunk cmd{job.key, job.incarnation, job.start, job.end, job.object_key};
    propose(std::move(cmd),
            [this, key = job.key, object_key = job.object_key](state::apply_result r) {
                if (!r.refusal) {
                    _flushing.erase(key);
                    return;
                }
                // The object is garbage: the stream changed under the flush (deleted,
                // recreated), or the log refused the command (a full disk). In the latter
                // case the bytes are still to flush and the next flush writes the very
                // same key: it waits until this removal is done, or the removal could
                // take the object the log then references.
                boost::asio::post(_cold.io, [this, key, object_key] {
                    (void)_cold.store->remove(object_key);
                    boost::asio::post(_strand, [this, key] { _flushing.erase(key); });
                });
            });
}

void group::collect_object_keys(std::unordered_set<std::string>& out) const {
    const auto collect = [&](const std::string&, const state::stream& s) {
        for (const auto& c : s.chunks) out.insert(c.object_key);
        if (s.snapshot && !s.snapshot->object_key.empty()) out.insert(s.snapshot->object_key);
    };
    _state.for_each_stream(collect);
    _state.for_each_retired_stream(collect);
}

std::vector<fork_reference> group::fork_references() const {
    std::vector<fork_reference> out;
    const auto collect = [&](const std::string& key, const state::stream& s) {
        for (const auto& [reference, fork] : s.forks) {
            out.push_back(
                fork_reference{fork, state::drop_fork_ref{key, s.incarnation, reference}});
        }
    };
    _state.for_each_stream(collect);
    _state.for_each_retired_stream(collect);
    return out;
}

bool group::holds_fork(const fork_reference& held) const {
    const state::stream* fork = _state.find_any(held.fork_key);
    return fork != nullptr && fork->origin && fork->origin->source_key == held.drop.key &&
           fork->origin->source_incarnation == held.drop.incarnation &&
           fork->origin->reference == held.drop.reference;
}

error group::missing(const std::string& key) const {
    if (_state.retired(key)) {
        return make_error(error_code::stream_gone,
                          "the stream was deleted; its forks still read it");
    }
    return make_error(error_code::stream_not_found, "stream not found");
}

result<fork_source_view> group::fork_source(const std::string& key) {
    const state::stream* s = live_stream(key, runtime::now_unix_ms());
    if (s == nullptr) {
        if (_state.retired(key)) {
            return make_error(error_code::stream_soft_deleted, "the fork's source was deleted");
        }
        return make_error(error_code::stream_not_found, "the fork's source does not exist");
    }
    return fork_source_view{s->incarnation, s->content_type, s->json, s->expiry, s->tail()};
}

std::shared_ptr<const live_update> group::live_answer(const read_request& request) {
    read_plan plan = read(request);
    const stream_view& view = plan.view;
    if (!plan.cold.empty() || plan.inherited || (!view.refusal && view.next != view.tail)) {
        return nullptr;
    }
    return std::make_shared<const live_update>(std::move(plan.view));
}

void group::follow(read_request request, const std::shared_ptr<live_subscription>& subscription) {
    if (_live.stopped()) {
        subscription->end();
        return;
    }
    if (has_news(request)) {
        // One update, then the reader reads or follows again.
        if (auto answer = live_answer(request)) subscription->offer(std::move(answer));
        subscription->end();
        return;
    }
    _live.follow(std::move(request), subscription);
}

bool group::has_news(const read_request& request) {
    const state::stream* s = live_stream(request.key, runtime::now_unix_ms());
    return s == nullptr || s->incarnation != request.if_incarnation || s->closed ||
           s->tail() > request.start.position;
}

void group::stop_watches() { _live.stop(); }

std::optional<state::apply_result> group::answer_before_body(const state::append& headers) {
    const auto now = runtime::now_unix_ms();
    if (live_stream(headers.key, now) == nullptr) return std::nullopt;
    return _state.answer_from_headers(headers, now);
}

namespace {

storage::byte_slice owned_slice(std::string bytes) {
    auto owned = std::make_shared<std::string>(std::move(bytes));
    const char* data = owned->data();
    const std::size_t size = owned->size();
    return storage::byte_slice{std::move(owned), data, size};
}

}  // namespace

snapshot_view group::read_snapshot(const std::string& key, std::uint64_t offset,
                                   std::uint64_t first, std::uint64_t length,
                                   std::string& object_key) {
    snapshot_view view;
    const state::stream* s = live_stream(key, runtime::now_unix_ms());
    if (s == nullptr) {
        view.refusal = missing(key);
        return view;
    }
    view.incarnation = s->incarnation;
    view.tail = s->tail();
    if (!s->snapshot || s->snapshot->offset != offset) {
        view.refusal =
            make_error(error_code::snapshot_not_found, "no latest snapshot at this offset");
        return view;
    }
    const state::snapshot_ref& snap = *s->snapshot;
    view.offset = snap.offset;
    view.content_type = snap.content_type;
    view.digest = protocol::to_hex(snap.digest);
    view.size = snap.size;
    view.first = std::min(first, snap.size);
    view.length = std::min(length, snap.size - view.first);
    if (view.length == 0) return view;
    if (snap.object_key.empty()) {
        view.body.push_back(owned_slice(snap.inline_body.substr(view.first, view.length)));
    } else {
        object_key = snap.object_key;
    }
    return view;
}

bootstrap_view group::bootstrap(const std::string& key, std::uint64_t max_update_bytes,
                                std::string& snapshot_object_key) {
    bootstrap_view view;
    const state::stream* s = live_stream(key, runtime::now_unix_ms());
    if (s == nullptr) {
        view.refusal = missing(key);
        return view;
    }
    view.incarnation = s->incarnation;
    view.content_type = s->content_type;
    view.json = s->json;
    view.tail = s->tail();
    view.start = s->retained;
    if (s->snapshot) {
        view.has_snapshot = true;
        view.start = s->snapshot->offset;
        view.snapshot =
            read_snapshot(key, s->snapshot->offset, 0, s->snapshot->size, snapshot_object_key);
    }
    view.next = view.start;
    // Updates come only from the hot tail (extensions 3.2 note): otherwise the
    // answer is partial at the snapshot point and the client reads on.
    if (view.start < s->bytes.begin_offset() || view.start == s->tail()) return view;
    std::uint64_t end = std::min(s->tail(), view.start + max_update_bytes);
    if (s->json && end < s->tail()) {
        // Whole messages only, and at least one even when it alone passes the cap.
        std::uint64_t e = end;
        while (e > view.start && s->bytes.byte_at(e - 1) != '\n') --e;
        if (e == view.start) {
            e = end;
            while (e < s->tail() && s->bytes.byte_at(e - 1) != '\n') ++e;
        }
        end = e;
    } else if (!s->json && end < s->tail()) {
        return view;  // more than the cap: the snapshot part only
    }
    s->bytes.read(view.start, end - view.start, view.updates);
    view.next = end;
    return view;
}

void group::watch(const read_request& request, const std::shared_ptr<live_signal>& signal) {
    if (_live.stopped()) {
        signal->fire(nullptr);
        return;
    }
    if (has_news(request)) {
        signal->fire(live_answer(request));
        return;
    }
    _live.watch(request, signal);
}

read_plan group::read(const read_request& request, std::optional<std::uint64_t> as_source_of) {
    read_plan plan;
    stream_view& view = plan.view;
    const auto now = runtime::now_unix_ms();
    const state::stream* s = as_source_of ? _state.find_source(request.key, *as_source_of)
                                          : live_stream(request.key, now);
    if (s == nullptr) {
        // A fork's source is kept while the fork exists; only retention can
        // have dropped the bytes it inherits.
        view.refusal = as_source_of
                           ? make_error(error_code::stream_gone, "the inherited bytes are gone")
                           : missing(request.key);
        return plan;
    }
    view.incarnation = s->incarnation;
    view.content_type = s->content_type;
    view.json = s->json;
    view.expiry = s->expiry;
    view.stream_closed = s->closed;
    view.tail = s->tail();
    view.retained = s->retained;
    view.previous_incarnation = s->previous_incarnation;
    view.inherited_offset = s->inherited_offset;
    if (s->snapshot) {
        view.snapshot_offset = s->snapshot->offset;
        view.snapshot_digest = protocol::to_hex(s->snapshot->digest);
    }

    std::uint64_t start = s->retained;
    switch (request.start.where) {
        case protocol::read_start::kind::beginning:
            // A read of the whole history cannot be served once retention
            // dropped its start (extensions 2.2): 410, and bootstrap recovers.
            if (s->retained > 0) {
                view.refusal = make_error(error_code::stream_gone,
                                          "the stream's beginning is no longer retained");
                return plan;
            }
            break;
        case protocol::read_start::kind::now:
            start = s->tail();
            break;
        case protocol::read_start::kind::position:
            start = request.start.position;
            if (start < s->retained) {
                view.refusal = make_error(error_code::stream_gone,
                                          "offset is below the earliest retained offset");
                return plan;
            }
            if (start > s->tail()) {
                view.refusal = make_error(error_code::offset_out_of_range,
                                          "offset is beyond the stream's tail");
                return plan;
            }
            break;
    }
    if (request.if_incarnation && *request.if_incarnation != s->incarnation) {
        view.refusal = make_error(error_code::incarnation_mismatch,
                                  "Stream-Incarnation does not match the stream");
        return plan;
    }
    if (request.renews_ttl && !as_source_of) _last_read_ms[request.key] = now;

    view.start = start;
    view.next = start;
    if (request.max_bytes == 0 || start == s->tail()) return plan;

    const std::uint64_t end = std::min(s->tail(), start + request.max_bytes);
    std::uint64_t at = start;
    if (at < s->own_start()) {
        // A fork's bytes below its fork point are its source's: no copy.
        at = std::min(end, s->own_start());
        plan.inherited =
            inherited_range{s->origin->source_key, s->origin->source_incarnation, start, at};
    }
    // Below the hot tail the bytes are in chunks: plan them, load them off the strand.
    if (at < end && at < s->bytes.begin_offset()) {
        auto chunk = std::upper_bound(
            s->chunks.begin(), s->chunks.end(), at,
            [](std::uint64_t o, const state::chunk_ref& c) { return o < c.start; });
        --chunk;
        for (; at < end && at < s->bytes.begin_offset(); ++chunk) {
            const std::uint64_t stop = std::min({end, chunk->end, s->bytes.begin_offset()});
            plan.cold.push_back(cold_piece{chunk->object_key, chunk->end - chunk->start,
                                           at - chunk->start, stop - at});
            at = stop;
        }
    }
    if (at < end) s->bytes.read(at, end - at, view.data);
    view.next = end;
    return plan;
}

}  // namespace dstream::service
