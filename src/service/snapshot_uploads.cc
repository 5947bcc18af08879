#include "service/snapshot_uploads.h"

#include <algorithm>
#include <unordered_set>

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

#include "protocol/digest.h"
#include "protocol/snapshot_parts.h"
#include "runtime/clock.h"

namespace dstream::service {
namespace {

namespace asio = boost::asio;
using protocol::error_code;

// A piece of a copy: what one I/O task reads, hashes and writes.
constexpr std::uint64_t copy_piece_bytes = std::uint64_t{4} << 20;
// Parts of a stream's earlier incarnations are removed once staged this long
// before a part's or a discard's head, assuming the nodes' clocks agree
// within it; a later part may still be uploading to another node.
constexpr protocol::unix_ms earlier_parts_margin_ms = 60'000;
constexpr auto longest_sweep_interval = std::chrono::hours(1);

error store_failed() { return make_error(error_code::cold_store_failed, "the cold store failed"); }

bool staged_before(const part_object_name& name, protocol::unix_ms cutoff) {
    const auto at = protocol::part_staged_at(name.part_id);
    return at && *at < cutoff;
}

std::string new_part_id(const runtime::clock& clock, runtime::random_source& random) {
    const std::uint64_t high = random.next();
    return protocol::make_part_id(clock.wall_ms(), high, random.next());
}

// extensions 2.2: an answer final for the commit's key uses its parts up; a
// retryable one (503, 502, 413) leaves them for the repeat.
bool final_for_key(const state::apply_result& answer) {
    if (!answer.refusal) return true;
    switch (protocol::http_status(answer.refusal->code)) {
        case 400:
        case 404:
        case 409:
        case 410:
        case 412:
            return true;
        default:
            return false;
    }
}

state::apply_result refused(error e, std::uint64_t incarnation) {
    state::apply_result r;
    r.refusal = std::move(e);
    r.incarnation = incarnation;
    return r;
}

part_admission answer_admission(staging_ledger::admission decided, std::uint64_t incarnation) {
    part_admission out;
    out.answer.incarnation = incarnation;
    if (decided.exceeded) {
        out.answer.refusal = make_error(error_code::staged_parts_limit,
                                        "the stream holds as many staged parts as it may");
        out.answer.exceeded = decided.exceeded;
    }
    out.upload = std::move(decided.upload);
    return out;
}

}  // namespace

error commit_in_progress() {
    return make_error(error_code::snapshot_commit_in_progress,
                      "a commit or discard of this stream's parts is running");
}

struct snapshot_uploads::copy_job {
    std::optional<run> running;
    parts_commit request;
    std::uint64_t incarnation = 0;
    done_fn<state::apply_result> done;
    std::vector<std::string> part_keys;
    std::vector<std::uint64_t> part_sizes;
    std::uint64_t total = 0;
    std::string object_key;
    std::unique_ptr<storage::object_writer> writer;  // abandons the object unless finished
    protocol::hasher hasher;
    std::size_t part = 0;  // copying part_keys[part] ...
    std::uint64_t at = 0;  // ... from this offset
    std::string piece;
};

snapshot_uploads::snapshot_uploads(asio::any_io_executor timers, const cold_tier& cold,
                                   std::chrono::seconds grace, publish_fn publish,
                                   const runtime::clock& clock, runtime::random_source& random)
    : _cold(cold),
      _grace(grace),
      _publish(std::move(publish)),
      _clock(clock),
      _random(random),
      _sweep_timer(std::move(timers)) {}

void snapshot_uploads::start() { schedule_sweep(); }

void snapshot_uploads::schedule_sweep() {
    _sweep_timer.expires_after(
        std::min<std::chrono::steady_clock::duration>(_grace, longest_sweep_interval));
    _sweep_timer.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        asio::post(_cold.io, [this] { sweep(); });
        schedule_sweep();
    });
}

void snapshot_uploads::admit(const std::string& key, std::uint64_t incarnation,
                             std::uint64_t declared_bytes, done_fn<part_admission> done) {
    auto decided = _ledger->admit(key, declared_bytes, false);
    if (!decided.needs_listing) {
        done(answer_admission(std::move(decided), incarnation));
        return;
    }
    const auto head_ms = _clock.wall_ms();
    asio::post(_cold.io,
               [this, key, incarnation, declared_bytes, head_ms, done = std::move(done)]() mutable {
                   const status listed = relist(key, [&](const part_object_name& name) {
                       return name.incarnation != incarnation &&
                              staged_before(name, head_ms - earlier_parts_margin_ms);
                   });
                   if (!listed) {
                       part_admission failed;
                       failed.answer.refusal = listed.err();
                       failed.answer.incarnation = incarnation;
                       done(std::move(failed));
                       return;
                   }
                   done(answer_admission(_ledger->admit(key, declared_bytes, true), incarnation));
               });
}

void snapshot_uploads::stage(const std::string& key, std::uint64_t incarnation, std::string body,
                             std::unique_ptr<part_upload> upload, done_fn<parts_answer> done) {
    std::string id = new_part_id(_clock, _random);
    std::string object_key = part_object_key(key, incarnation, id);
    asio::post(_cold.io, [this, incarnation, id = std::move(id), object_key = std::move(object_key),
                          body = std::move(body), upload = std::move(upload),
                          done = std::move(done)]() mutable {
        parts_answer answer;
        answer.incarnation = incarnation;
        if (const status put = _cold.store->put(object_key, body); !put) {
            answer.refusal = put.err();
        } else {
            _ledger->staged(*upload, object_key, body.size());
            answer.part_id = std::move(id);
        }
        done(std::move(answer));
    });
}

void snapshot_uploads::discard(const std::string& key, std::uint64_t incarnation,
                               done_fn<parts_answer> done) {
    parts_answer answer;
    answer.incarnation = incarnation;
    auto running = begin_run(key);
    if (!running) {
        answer.refusal = commit_in_progress();
        done(std::move(answer));
        return;
    }
    const auto head_ms = _clock.wall_ms();
    asio::post(_cold.io, [this, key, incarnation, head_ms, running = std::move(*running),
                          answer = std::move(answer), done = std::move(done)]() mutable {
        const status removed = relist(key, [&](const part_object_name& name) {
            return name.incarnation == incarnation ||
                   staged_before(name, head_ms - earlier_parts_margin_ms);
        });
        running.end();
        if (!removed) answer.refusal = store_failed();
        done(std::move(answer));
    });
}

void snapshot_uploads::drop_parts(const std::string& key, std::uint64_t incarnation,
                                  const std::vector<std::string>& part_ids) {
    asio::post(_cold.io, [this, key, incarnation, part_ids] {
        remove_parts(key, incarnation, part_ids);
        // A commit's listing only counts.
        (void)relist(key, [](const part_object_name&) { return false; });
    });
}

void snapshot_uploads::stream_deleted(const std::string& key, std::uint64_t incarnation) {
    deleted_parts deleted{_ledger->incarnations(key), _clock.wall_ms()};
    deleted.incarnations.push_back(incarnation);
    {
        // A running commit may be copying them: they go when it ends.
        const std::lock_guard lock(_mutex);
        if (auto it = _running.find(key); it != _running.end()) {
            if (it->second) {  // an earlier delete waits too
                deleted.incarnations.insert(deleted.incarnations.end(),
                                            it->second->incarnations.begin(),
                                            it->second->incarnations.end());
            }
            it->second = std::move(deleted);
            return;
        }
    }
    remove_deleted(key, std::move(deleted));
}

void snapshot_uploads::remove_deleted(const std::string& key, deleted_parts deleted) {
    asio::post(_cold.io, [this, key, deleted = std::move(deleted)] {
        const auto& known = deleted.incarnations;
        const status removed = relist(key, [&](const part_object_name& name) {
            return std::find(known.begin(), known.end(), name.incarnation) != known.end() ||
                   staged_before(name, deleted.at - earlier_parts_margin_ms);
        });
        if (!removed) {
            spdlog::warn("could not remove the staged parts of a deleted stream; the sweep will");
        }
    });
}

void snapshot_uploads::sweep() {
    const auto cutoff = _clock.wall_ms() - std::chrono::milliseconds(_grace).count();
    std::unordered_set<std::string> running;  // a commit may be copying their parts
    {
        const std::lock_guard lock(_mutex);
        for (const auto& [key, deleted] : _running) running.insert(stream_parts_prefix(key));
    }
    auto parts = _cold.store->list(std::string(part_key_prefix));
    if (!parts) {
        spdlog::warn("cannot list staged snapshot parts; their sweep is skipped");
        return;
    }
    std::size_t removed = 0;
    for (const auto& part : *parts) {
        const auto name = parse_part_object_key(part.key);
        if (!name || running.contains(std::string(name->stream_prefix)) ||
            !staged_before(*name, cutoff)) {
            continue;
        }
        if (_cold.store->remove(part.key)) ++removed;
    }
    if (removed == 0) return;
    _ledger->forget_listings();
    spdlog::info("cold store: {} staged snapshot parts older than {} s removed", removed,
                 _grace.count());
}

status snapshot_uploads::relist(const std::string& key, const doomed_fn& doomed) {
    const std::uint64_t began = _ledger->begin_listing();
    auto listed = _cold.store->list(stream_parts_prefix(key));
    if (!listed) return listed.err();
    status outcome = ok_status();
    std::vector<storage::object_entry> kept;
    for (auto& part : *listed) {
        const auto name = parse_part_object_key(part.key);
        if (name && doomed(*name)) {
            const status removed = _cold.store->remove(part.key);
            if (removed) continue;
            outcome = removed;
        }
        kept.push_back(std::move(part));
    }
    _ledger->end_listing(key, began, std::move(kept));
    return outcome;
}

void snapshot_uploads::remove_parts(const std::string& key, std::uint64_t incarnation,
                                    const std::vector<std::string>& part_ids) {
    for (const auto& id : part_ids) {
        // Ids this server did not make name no object (and never a path).
        if (!protocol::part_staged_at(id)) continue;
        if (!_cold.store->remove(part_object_key(key, incarnation, id))) {
            spdlog::warn(
                "could not remove a used snapshot part; a discard, a delete or the sweep will");
        }
    }
}

std::optional<snapshot_uploads::run> snapshot_uploads::begin_run(const std::string& key) {
    const std::lock_guard lock(_mutex);
    if (!_running.try_emplace(key).second) return std::nullopt;
    return run(*this, key);
}

void snapshot_uploads::run::end() {
    if (auto* owner = std::exchange(_owner, nullptr)) owner->end_run(_key);
}

void snapshot_uploads::end_run(const std::string& key) {
    std::optional<deleted_parts> deleted;
    {
        const std::lock_guard lock(_mutex);
        auto it = _running.find(key);
        deleted = std::move(it->second);
        _running.erase(it);
    }
    if (deleted) remove_deleted(key, std::move(*deleted));
}

bool snapshot_uploads::try_copy() {
    const std::lock_guard lock(_mutex);
    if (_copies == max_concurrent_copies) return false;
    ++_copies;
    return true;
}

void snapshot_uploads::end_copy() {
    const std::lock_guard lock(_mutex);
    --_copies;
}

void snapshot_uploads::commit(run running, const parts_commit& request, std::uint64_t incarnation,
                              done_fn<state::apply_result> done) {
    if (!try_copy()) {
        running.end();
        done(refused(make_error(error_code::snapshot_commits_busy,
                                "the node copies as many snapshots as it can"),
                     incarnation));
        return;
    }
    auto job = std::make_shared<copy_job>();
    job->running.emplace(std::move(running));
    job->request = request;
    job->incarnation = incarnation;
    job->done = std::move(done);
    asio::post(_cold.io, [this, job] { resolve(job); });
}

void snapshot_uploads::resolve(const std::shared_ptr<copy_job>& job) {
    const parts_commit& request = job->request;
    for (const auto& id : request.part_ids) {
        // Only an id this server made names an object; any other is unknown.
        std::string object_key = protocol::part_staged_at(id)
                                     ? part_object_key(request.key, job->incarnation, id)
                                     : std::string();
        std::optional<std::uint64_t> size;
        if (!object_key.empty()) {
            auto found = _cold.store->size(object_key);
            if (!found) return fail_copy(job, found.err());
            size = *found;
        }
        if (!size) {
            return fail_copy(
                job, make_error(error_code::unknown_part,
                                "a listed part is unknown or was staged for another stream"));
        }
        job->total += *size;
        if (job->total > max_assembled_snapshot_bytes) {
            return fail_copy(job, make_error(error_code::snapshot_too_large,
                                             "the assembled snapshot exceeds the server's limit"));
        }
        job->part_keys.push_back(std::move(object_key));
        job->part_sizes.push_back(*size);
    }
    job->object_key = snapshot_object_key(request.key, job->incarnation, request.offset,
                                          protocol::to_hex(request.digest));
    auto writer = _cold.store->open_writer(job->object_key);
    if (!writer) return fail_copy(job, writer.err());
    job->writer = std::move(*writer);
    job->hasher = protocol::snapshot_hasher(request.content_type);
    copy_piece(job);
}

void snapshot_uploads::copy_piece(const std::shared_ptr<copy_job>& job) {
    while (job->part < job->part_keys.size() && job->at == job->part_sizes[job->part]) {
        ++job->part;
        job->at = 0;
    }
    if (job->part == job->part_keys.size()) return finish_copy(job);
    const std::uint64_t length = std::min(copy_piece_bytes, job->part_sizes[job->part] - job->at);
    const status read = _cold.store->get(job->part_keys[job->part], job->at, length, job->piece);
    const status written = read ? job->writer->write(job->piece) : read;
    if (!written) return fail_copy(job, written.err());
    job->hasher.update(job->piece);
    job->at += length;
    asio::post(_cold.io, [this, job] { copy_piece(job); });
}

void snapshot_uploads::finish_copy(const std::shared_ptr<copy_job>& job) {
    const protocol::body_digest digest = job->hasher.finish();
    const bool matches = digest == job->request.digest;
    // A mismatch abandons the object: it never appears.
    const status finished = matches ? job->writer->finish() : ok_status();
    job->writer.reset();
    end_copy();  // the object is durable (or gone): the copy is over
    if (!matches) {
        // The copy used the parts up.
        settle(job,
               refused(make_error(error_code::snapshot_digest_mismatch,
                                  "the assembled snapshot does not match Stream-Snapshot-Digest"),
                       job->incarnation),
               true);
        return;
    }
    if (!finished) {
        settle(job, refused(finished.err(), job->incarnation), false);
        return;
    }
    state::publish_snapshot cmd;
    cmd.key = job->request.key;
    // The parts' incarnation: a stream recreated during the copy is not published to.
    cmd.if_incarnation = job->incarnation;
    cmd.offset = job->request.offset;
    cmd.content_type = job->request.content_type;
    cmd.digest = digest;
    cmd.size = job->total;
    cmd.object_key = job->object_key;
    _publish(std::move(cmd), [this, job](state::apply_result answer) {
        if (answer.refusal && answer.refusal->code == error_code::incarnation_mismatch &&
            !job->request.if_incarnation) {
            // The client named no incarnation: to it, the parts of the
            // incarnation that is gone are unknown.
            answer.refusal = make_error(error_code::unknown_part,
                                        "the stream was recreated; its parts are gone");
        }
        const bool used = final_for_key(answer);
        settle(job, std::move(answer), used);
    });
}

void snapshot_uploads::fail_copy(const std::shared_ptr<copy_job>& job, error e) {
    end_copy();
    settle(job, refused(std::move(e), job->incarnation), false);
}

void snapshot_uploads::settle(const std::shared_ptr<copy_job>& job, state::apply_result answer,
                              bool parts_used) {
    // The commit stops running before it answers, so a repeat after the
    // answer is answered from the key, never with 503.
    job->running.reset();
    job->done(std::move(answer));
    drop_parts(job->request.key, job->incarnation,
               parts_used ? job->request.part_ids : std::vector<std::string>());
}

}  // namespace dstream::service
