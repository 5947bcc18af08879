#include "service/engine.h"

#include <algorithm>
#include <fstream>
#include <stdexcept>
#include <variant>

#include "base/stable_hash.h"
#include "protocol/digest.h"
#include "runtime/await_callback.h"
#include "service/cold_reads.h"
#include "service/group.h"
#include "service/snapshot_uploads.h"
#include "service/unhosted_log.h"

namespace dstream::service {
namespace {

namespace asio = boost::asio;

// A publish or a retention: apply judges the JSON boundary at its offset
// from the byte read_boundary() puts in it.
bool needs_boundary(const state::command_body& body) {
    return std::holds_alternative<state::publish_snapshot>(body) ||
           std::holds_alternative<state::retain>(body);
}

using chunk_bytes = std::shared_ptr<const std::string>;

// A read that must be linearizable on a node that could not prove it leads
// (extensions 9.2): the edge redirects it or answers 503.
error not_leading_refusal() {
    return make_error(protocol::error_code::no_leader,
                      "this node cannot prove that it leads the stream's group");
}

// The chunks the cache holds for the plan's cold pieces, null for the others.
std::vector<chunk_bytes> cached_chunks(const cold_tier& cold, const read_plan& plan) {
    std::vector<chunk_bytes> chunks;
    chunks.reserve(plan.cold.size());
    for (const auto& piece : plan.cold) chunks.push_back(cold.cache->get(piece.object_key));
    return chunks;
}

// Puts the cold pieces of a plan in front of its hot slices, loading the
// chunks `chunks` lacks whole (on the I/O pool) into the cache.
void load_cold_pieces(const cold_tier& cold, read_plan& plan, std::vector<chunk_bytes> chunks) {
    std::vector<byte_slice> slices;
    for (std::size_t i = 0; i < plan.cold.size(); ++i) {
        const cold_piece& piece = plan.cold[i];
        chunk_bytes& object = chunks[i];
        if (!object) {
            auto loaded = std::make_shared<std::string>();
            if (!cold.store->get(piece.object_key, 0, piece.object_size, *loaded)) {
                plan.view.refusal = cold_read_refusal();
                plan.view.data.clear();
                return;
            }
            object = loaded;
            cold.cache->put(piece.object_key, object);
        }
        slices.push_back(byte_slice{object, object->data() + piece.offset, piece.length});
    }
    slices.insert(slices.end(), plan.view.data.begin(), plan.view.data.end());
    plan.view.data = std::move(slices);
}

// A catch-up read's cold pieces from a store that streams: sent on as the
// store delivers them, the cached ones from the cache, in plan order; loaded
// as before when the cache holds them all.
void stream_cold_pieces(const cold_tier& cold, read_plan& plan) {
    std::vector<chunk_bytes> chunks = cached_chunks(cold, plan);
    if (std::ranges::all_of(chunks, [](const chunk_bytes& c) { return c != nullptr; })) {
        load_cold_pieces(cold, plan, std::move(chunks));
        return;
    }
    std::vector<streamed_piece> pieces;
    pieces.reserve(plan.cold.size());
    for (std::size_t i = 0; i < plan.cold.size(); ++i) {
        cold_piece& piece = plan.cold[i];
        pieces.push_back(streamed_piece{std::move(piece.object_key), piece.offset, piece.length,
                                        std::move(chunks[i])});
    }
    plan.view.streamed = cold.streamed_reads->open(*cold.store, std::move(pieces));
}

// Leaves the plan's cold pieces in their files, in front of its hot slices;
// false when the store gives no files (the pieces are then loaded).
bool open_cold_files(const cold_tier& cold, read_plan& plan) {
    std::vector<storage::file_slice> files;
    files.reserve(plan.cold.size());
    for (const auto& piece : plan.cold) {
        auto file = cold.store->open_file(piece.object_key);
        if (!file) return false;
        files.push_back(storage::file_slice{std::move(file), piece.offset, piece.length});
    }
    plan.view.files = std::move(files);
    return true;
}

void post_read(group& g, read_request request, std::optional<std::uint64_t> as_source_of,
               runtime::deliver_fn<read_plan> done) {
    asio::post(g.strand(), [&g, request = std::move(request), as_source_of,
                            done = std::move(done)]() mutable {
        read_plan plan = g.read(request, as_source_of);
        if (plan.cold.empty()) {
            done(std::move(plan));
            return;
        }
        // A JSON stream's bytes are rendered, and a fork's are stitched
        // behind its source's: both need them in memory.
        const bool as_sent = request.cold_as_files && !plan.view.json && !plan.inherited;
        asio::post(g.cold().io, [cold = g.cold(), plan = std::move(plan), done = std::move(done),
                                 as_sent]() mutable {
            if (as_sent && cold.streamed_reads && cold.store->streams_ranges()) {
                stream_cold_pieces(cold, plan);
            } else if (!as_sent || !open_cold_files(cold, plan)) {
                load_cold_pieces(cold, plan, cached_chunks(cold, plan));
            }
            done(std::move(plan));
        });
    });
}

// A JSON stream rendered as a JSON array must end on a message boundary (the
// LF that ends each stored message). Returns false when the view holds no
// whole message, so the caller reads further.
bool trim_to_whole_messages(stream_view& view) {
    std::uint64_t cut = view.next;
    for (auto it = view.data.rbegin(); it != view.data.rend(); ++it) {
        const auto text = it->view();
        const auto lf = text.rfind('\n');
        if (lf != std::string_view::npos) {
            const std::size_t keep = lf + 1;
            const std::uint64_t dropped = text.size() - keep;
            it->size = keep;
            view.data.erase(it.base(), view.data.end());
            view.next = cut - dropped;
            return true;
        }
        cut -= text.size();
    }
    return false;
}

void post_watch(group& g, read_request request, std::shared_ptr<live_signal> signal) {
    asio::post(g.strand(), [&g, request = std::move(request), signal = std::move(signal)] {
        g.watch(request, signal);
    });
}

}  // namespace

engine::engine(const runtime::io_contexts& io, std::size_t group_count, const cold_tier& cold,
               const checkpointing& checkpoints, const runtime::clock& clock,
               runtime::random_source& random)
    : _random(random),
      // A lane per thread: a stream's fan-out uses every thread there is.
      _lanes(io) {
    const group_inputs inputs{clock, random, _lanes, cold, checkpoints};
    _groups.reserve(group_count);
    for (std::size_t i = 0; i < group_count; ++i) {
        _groups.push_back(
            std::make_unique<group>(static_cast<std::uint32_t>(i), group_strand(io.of(i)), inputs));
        _groups.back()->set_forwarder(
            [this](state::command_body body) { forward(std::move(body)); });
    }
    if (cold.enabled()) {
        _uploads = std::make_unique<snapshot_uploads>(
            asio::make_strand(io.first()), cold, cold.staged_part_grace,
            [this](state::publish_snapshot cmd, write_done done) {
                group& g = group_for(cmd.key);  // before `cmd` moves away
                g.submit(std::move(cmd), std::move(done));
            },
            clock, random);
    }
}

void engine::forward(state::command_body body) {
    const std::string* key = state::command_key(body);
    group& g = group_for(key ? std::string_view(*key) : std::string_view());
    if (!g.where().hosted && _peer_reads != nullptr) {
        peer_request ask;
        ask.what = peer_request::kind::propose;
        ask.group = g.id();
        ask.command = state::encode_command(0, body);
        _peer_reads->ask(std::move(ask), [](peer_answer) {});
        return;
    }
    g.submit_via_leader(std::move(body), {});
}

std::vector<state::drop_fork_ref> engine::dangling_fork_references() {
    std::vector<state::drop_fork_ref> dangling;
    for (const auto& g : _groups) {
        for (auto& held : g->fork_references()) {
            if (!group_for(held.fork_key).holds_fork(held))
                dangling.push_back(std::move(held.drop));
        }
    }
    return dangling;
}

void engine::restore(std::size_t group, state::group_state state, std::uint64_t index,
                     std::uint64_t term) {
    if (group >= _groups.size()) {
        throw std::runtime_error("a checkpoint names group " + std::to_string(group) +
                                 " beyond --groups");
    }
    _groups[group]->restore(std::move(state), index, term);
}

std::uint64_t engine::applied_index(std::size_t group) const {
    return _groups[group]->applied_index();
}

std::uint64_t engine::applied_term(std::size_t group) const {
    return _groups[group]->applied_term();
}

std::unordered_set<std::string> engine::referenced_object_keys() const {
    std::unordered_set<std::string> keys;
    for (const auto& g : _groups) g->collect_object_keys(keys);
    return keys;
}

void engine::replay(std::size_t group, std::uint64_t index, std::uint64_t term,
                    std::string_view bytes) {
    if (group >= _groups.size()) {
        throw std::runtime_error("the log holds group " + std::to_string(group) +
                                 " but the node runs " + std::to_string(_groups.size()) +
                                 " groups: start it with the --groups it was created with");
    }
    _groups[group]->replay(index, term, bytes);
}

void engine::attach_logs(const log_factory& make_log) {
    for (std::size_t i = 0; i < _groups.size(); ++i) {
        auto log = make_log(i, _groups[i]->strand());
        if (log) {
            _groups[i]->attach_log(std::move(log));
        } else {
            _groups[i]->attach_log(std::make_unique<unhosted_log>(), false);
        }
    }
}

engine::~engine() = default;

void engine::start() {
    // The check runs before any strand does (nothing else reads the states);
    // its drops are proposed once each group's log has started, behind it.
    std::vector<state::drop_fork_ref> dangling = dangling_fork_references();
    for (auto& g : _groups) {
        asio::post(g->strand(), [g = g.get()] { g->start(); });
    }
    // Proposed only where this node leads the source's group: a cluster's
    // replica may hold a fork's group as it was, or not at all.
    for (auto& drop : dangling) group_for(drop.key).submit(std::move(drop), {});
    if (_uploads) _uploads->start();
}

void engine::sweep_staged_parts() {
    if (_uploads) _uploads->sweep();
}

group& engine::group_for(std::string_view key) {
    return *_groups[stable_hash(key) % _groups.size()];
}

const group& engine::group_for(std::string_view key) const {
    return *_groups[stable_hash(key) % _groups.size()];
}

placement engine::place(std::string_view key) const { return group_for(key).where(); }

asio::awaitable<bool> engine::catch_up(group& g) {
    return runtime::await_callback<bool>([&g](runtime::deliver_fn<bool> done) mutable {
        asio::post(g.strand(),
                   [&g, done = std::move(done)]() mutable { g.catch_up(std::move(done)); });
    });
}

asio::awaitable<void> engine::read_boundary(state::command_body& body) {
    std::optional<state::boundary_check>* boundary = nullptr;
    read_request request;
    std::uint64_t offset = 0;
    if (auto* publish = std::get_if<state::publish_snapshot>(&body)) {
        boundary = &publish->boundary;
        request.key = publish->key;
        offset = publish->offset;
    } else if (auto* retain = std::get_if<state::retain>(&body)) {
        boundary = &retain->boundary;
        request.key = retain->key;
        offset = retain->offset;
    }
    if (boundary == nullptr || offset == 0) co_return;
    request.start = protocol::read_start{protocol::read_start::kind::position, offset - 1};
    request.max_bytes = 1;
    request.renews_ttl = false;
    const stream_view view = co_await read(request);
    if (view.refusal || !view.json || view.data.empty()) co_return;  // apply decides
    *boundary = state::boundary_check{view.incarnation, view.data.front().view().front() == '\n'};
}

asio::awaitable<state::apply_result> engine::propose(state::command_body& body, bool via_leader) {
    // `body` stays in the caller's frame until the answer: taken when the coroutine waits.
    return runtime::await_callback<state::apply_result>(
        [this, &body, via_leader](runtime::deliver_fn<state::apply_result> done) {
            const std::string* key = state::command_key(body);
            group& g = group_for(key ? std::string_view(*key) : std::string_view());
            if (via_leader && !g.where().hosted && _peer_reads != nullptr) {
                // The group's replica on another node has its leader propose it.
                peer_request ask;
                ask.what = peer_request::kind::propose;
                ask.group = g.id();
                ask.command = state::encode_command(0, body);
                _peer_reads->ask(std::move(ask), [done = std::move(done)](peer_answer a) mutable {
                    state::apply_result r;
                    r.refusal = std::move(a.refusal);
                    done(std::move(r));
                });
            } else if (via_leader) {
                g.submit_via_leader(std::move(body), std::move(done));
            } else {
                g.submit_from_request(std::move(body), std::move(done));
            }
        });
}

asio::awaitable<state::apply_result> engine::write(state::command_body& body) {
    if (needs_boundary(body) || (_uploads && std::holds_alternative<state::delete_stream>(body))) {
        return write_with_follow_up(body);
    }
    return propose(body);
}

asio::awaitable<state::apply_result> engine::write_with_follow_up(state::command_body& body) {
    if (needs_boundary(body)) co_await read_boundary(body);
    // A delete also removes the stream's staged parts, after it answers.
    const std::string* key = state::command_key(body);
    const std::string deleted =
        std::holds_alternative<state::delete_stream>(body) ? *key : std::string();
    state::apply_result r = co_await propose(body);
    if (!deleted.empty() && r.kind == state::write_kind::deleted)
        _uploads->stream_deleted(deleted, *r.incarnation);
    co_return r;
}

asio::awaitable<read_plan> engine::read_group(const read_request& request,
                                              std::optional<std::uint64_t> as_source_of) {
    return runtime::await_callback<read_plan>([&g = group_for(request.key), request, as_source_of](
                                                  runtime::deliver_fn<read_plan> done) mutable {
        post_read(g, std::move(request), as_source_of, std::move(done));
    });
}

asio::awaitable<stream_view> engine::read_stitched(const read_request& request,
                                                   std::optional<std::uint64_t> as_source_of) {
    if (as_source_of && _peer_reads != nullptr && !group_for(request.key).where().hosted) {
        co_return co_await read_from_peer(request, *as_source_of);
    }
    read_plan plan = co_await read_group(request, as_source_of);
    if (!plan.inherited || plan.view.refusal) co_return std::move(plan.view);
    // The bytes below the fork point are the source's, as they were: read
    // them from its group (cross-group by message), and put them in front.
    read_request below;
    below.key = plan.inherited->source_key;
    below.start = protocol::read_start{protocol::read_start::kind::position, plan.inherited->start};
    below.max_bytes = plan.inherited->end - plan.inherited->start;
    below.renews_ttl = false;
    const std::optional<std::uint64_t> source = plan.inherited->reference;
    stream_view inherited = co_await read_stitched(below, source);
    group& source_group = group_for(below.key);
    if ((inherited.refusal || inherited.tail < plan.inherited->end) &&
        source_group.where().hosted && !source_group.where().leads) {
        // This node's replica of the source may not have applied the source,
        // or the bytes the fork inherits, yet (a follower behind its leader):
        // caught up with the leader, it has.
        if (!co_await catch_up(source_group)) {
            plan.view.refusal = not_leading_refusal();
            plan.view.data.clear();
            co_return std::move(plan.view);
        }
        inherited = co_await read_stitched(below, source);
    }
    stream_view& view = plan.view;
    if (inherited.refusal) {
        view.refusal = make_error(protocol::error_code::stream_gone,
                                  "bytes this fork inherits are no longer retained by its source");
        view.data.clear();
        co_return std::move(view);
    }
    if (inherited.next < plan.inherited->end) {
        view.data = std::move(inherited.data);
        view.next = inherited.next;
    } else {
        inherited.data.insert(inherited.data.end(), view.data.begin(), view.data.end());
        view.data = std::move(inherited.data);
    }
    co_return std::move(view);
}

asio::awaitable<stream_view> engine::read(const read_request& request) {
    if (request.linearizable && !co_await catch_up(group_for(request.key))) {
        stream_view refused;
        refused.refusal = not_leading_refusal();
        co_return refused;
    }
    const std::optional<std::uint64_t> own;
    stream_view view = co_await read_stitched(request, own);
    if (!request.whole_messages || !view.json || view.refusal || view.next == view.tail ||
        view.data.empty() || trim_to_whole_messages(view)) {
        co_return view;
    }
    // One message is larger than the cap: read on to its end (a message is at
    // most one request body).
    read_request longer = request;
    longer.max_bytes = request.max_bytes + (std::uint64_t{32} << 20);
    view = co_await read_stitched(longer, own);
    if (!view.refusal && view.next < view.tail) trim_to_whole_messages(view);
    co_return view;
}

asio::awaitable<std::optional<state::apply_result>> engine::answer_before_body(
    const state::append& headers) {
    using answer = std::optional<state::apply_result>;
    return runtime::await_callback<answer>(
        [&g = group_for(headers.key), headers](runtime::deliver_fn<answer> done) mutable {
            asio::post(g.strand(),
                       [&g, headers = std::move(headers), done = std::move(done)]() mutable {
                           done(g.answer_before_body(headers));
                       });
        });
}

namespace {

// Loads [first, first + length) of a cold object into `view` (on the I/O pool).
void load_object_range(const cold_tier& cold, const std::string& object_key, std::uint64_t first,
                       std::uint64_t length, snapshot_view& view) {
    auto bytes = std::make_shared<std::string>();
    if (!cold.store->get(object_key, first, length, *bytes)) {
        view.refusal = cold_read_refusal();
        return;
    }
    const char* data = bytes->data();
    view.body.push_back(byte_slice{std::move(bytes), data, length});
}

}  // namespace

asio::awaitable<snapshot_view> engine::read_snapshot(const std::string& key, std::uint64_t offset,
                                                     std::uint64_t first, std::uint64_t length) {
    return runtime::await_callback<snapshot_view>(
        [&g = group_for(key), key, offset, first,
         length](runtime::deliver_fn<snapshot_view> done) mutable {
            asio::post(g.strand(), [&g, key = std::move(key), offset, first, length,
                                    done = std::move(done)]() mutable {
                g.catch_up([&g, key = std::move(key), offset, first, length,
                            done = std::move(done)](bool confirmed) mutable {
                    if (!confirmed) {
                        snapshot_view refused;
                        refused.refusal = not_leading_refusal();
                        done(std::move(refused));
                        return;
                    }
                    std::string object_key;
                    snapshot_view view = g.read_snapshot(key, offset, first, length, object_key);
                    if (object_key.empty()) {
                        done(std::move(view));
                        return;
                    }
                    asio::post(g.cold().io, [cold = g.cold(), object_key, view = std::move(view),
                                             done = std::move(done)]() mutable {
                        load_object_range(cold, object_key, view.first, view.length, view);
                        done(std::move(view));
                    });
                });
            });
        });
}

asio::awaitable<bootstrap_view> engine::bootstrap(const std::string& key,
                                                  std::uint64_t max_update_bytes) {
    return runtime::await_callback<bootstrap_view>(
        [&g = group_for(key), key,
         max_update_bytes](runtime::deliver_fn<bootstrap_view> done) mutable {
            asio::post(g.strand(), [&g, key = std::move(key), max_update_bytes,
                                    done = std::move(done)]() mutable {
                g.catch_up([&g, key = std::move(key), max_update_bytes,
                            done = std::move(done)](bool confirmed) mutable {
                    if (!confirmed) {
                        bootstrap_view refused;
                        refused.refusal = not_leading_refusal();
                        done(std::move(refused));
                        return;
                    }
                    std::string object_key;
                    bootstrap_view view = g.bootstrap(key, max_update_bytes, object_key);
                    if (object_key.empty()) {
                        done(std::move(view));
                        return;
                    }
                    asio::post(g.cold().io, [cold = g.cold(), object_key, view = std::move(view),
                                             done = std::move(done)]() mutable {
                        load_object_range(cold, object_key, 0, view.snapshot.size, view.snapshot);
                        if (view.snapshot.refusal) view.refusal = view.snapshot.refusal;
                        done(std::move(view));
                    });
                });
            });
        });
}

asio::awaitable<std::shared_ptr<const live_update>> engine::wait(
    const read_request& request, std::chrono::steady_clock::time_point deadline) {
    auto signal = std::make_shared<live_signal>(co_await asio::this_coro::executor, deadline);
    post_watch(group_for(request.key), request, signal);
    co_return co_await signal->wait();
}

std::shared_ptr<live_subscription> engine::follow(const read_request& request,
                                                  const asio::any_io_executor& reader,
                                                  std::chrono::steady_clock::time_point deadline) {
    auto subscription = std::make_shared<live_subscription>(reader, deadline);
    subscription->start();
    group& g = group_for(request.key);
    asio::post(g.strand(), [&g, request, subscription] { g.follow(request, subscription); });
    return subscription;
}

void engine::end_live_reads() {
    _live_reads_ended = true;
    for (auto& g : _groups) asio::post(g->strand(), [g = g.get()] { g->stop_watches(); });
}

namespace {

error no_cold_store() {
    return make_error(protocol::error_code::no_cold_store,
                      "snapshot uploads in parts need a cold store");
}

parts_answer refused_by(const stream_view& target) {
    parts_answer answer;
    answer.refusal = target.refusal;
    answer.incarnation = target.incarnation;
    return answer;
}

// extensions 2.2: a commit is checked against the latest snapshot before its
// parts: a repeat of the published snapshot succeeds and a superseded or
// conflicting one answers 409, even after its parts are gone. Retention
// never passes the latest snapshot, so a commit below the retained offset is
// superseded and answers 409 here, before retention (the publish's apply
// keeps the 410). Nothing when the parts decide.
std::optional<state::apply_result> answer_from_key(const parts_commit& commit,
                                                   const stream_view& target) {
    if (!target.snapshot_offset) return std::nullopt;
    state::apply_result answer;
    answer.incarnation = target.incarnation;
    answer.snapshot_offset = target.snapshot_offset;
    answer.snapshot_digest = target.snapshot_digest;
    if (commit.offset == *target.snapshot_offset &&
        protocol::to_hex(commit.digest) == target.snapshot_digest) {
        return answer;
    }
    if (commit.offset <= *target.snapshot_offset) {
        answer.refusal =
            make_error(protocol::error_code::snapshot_conflict, "another snapshot is the latest");
        return answer;
    }
    return std::nullopt;
}

}  // namespace

std::optional<std::uint64_t> engine::max_snapshot_bytes() const {
    return _uploads ? std::optional<std::uint64_t>(max_assembled_snapshot_bytes) : std::nullopt;
}

asio::awaitable<stream_view> engine::parts_target(
    const std::string& key, const std::optional<std::uint64_t>& if_incarnation) {
    read_request lookup;
    lookup.key = key;
    lookup.start.where = protocol::read_start::kind::now;
    lookup.renews_ttl = false;  // a part changes nothing a reader can see
    lookup.if_incarnation = if_incarnation;
    co_return co_await read(lookup);
}

asio::awaitable<part_admission> engine::admit_part(
    const std::string& key, const std::optional<std::uint64_t>& if_incarnation,
    std::uint64_t declared_bytes) {
    part_admission admission;
    if (!_uploads) {
        admission.answer.refusal = no_cold_store();
        co_return std::move(admission);
    }
    const stream_view target = co_await parts_target(key, if_incarnation);
    if (target.refusal) {
        admission.answer = refused_by(target);
        co_return std::move(admission);
    }
    // Built outside the co_await, with references only (runtime/await_callback.h).
    const auto admit = [&](runtime::deliver_fn<part_admission> done) {
        _uploads->admit(key, target.incarnation, declared_bytes, std::move(done));
    };
    co_return co_await runtime::await_callback<part_admission>(admit);
}

asio::awaitable<parts_answer> engine::stage_part(const std::string& key,
                                                 const std::optional<std::uint64_t>& if_incarnation,
                                                 std::string& body,
                                                 std::unique_ptr<part_upload>& upload) {
    if (!_uploads) co_return parts_answer{no_cold_store()};
    if (!upload) {
        part_admission admission = co_await admit_part(key, if_incarnation, body.size());
        if (admission.answer.refusal) co_return std::move(admission.answer);
        upload = std::move(admission.upload);
    }
    // The stream may have been deleted or recreated while the body arrived.
    const stream_view target = co_await parts_target(key, if_incarnation);
    if (target.refusal) co_return refused_by(target);
    const auto stage = [&](runtime::deliver_fn<parts_answer> done) {
        _uploads->stage(key, target.incarnation, std::move(body), std::move(upload),
                        std::move(done));
    };
    co_return co_await runtime::await_callback<parts_answer>(stage);
}

asio::awaitable<parts_answer> engine::discard_parts(
    const std::string& key, const std::optional<std::uint64_t>& if_incarnation) {
    if (!_uploads) co_return parts_answer{no_cold_store()};
    const stream_view target = co_await parts_target(key, if_incarnation);
    if (target.refusal) co_return refused_by(target);
    const auto discard = [&](runtime::deliver_fn<parts_answer> done) {
        _uploads->discard(key, target.incarnation, std::move(done));
    };
    co_return co_await runtime::await_callback<parts_answer>(discard);
}

std::optional<state::apply_result> engine::answer_before_copy(const parts_commit& commit,
                                                              const stream_view& target) {
    if (target.refusal) {
        state::apply_result answer;
        answer.refusal = target.refusal;
        if (target.incarnation != 0) answer.incarnation = target.incarnation;
        // A 412 is final: the parts staged for the incarnation the client named are used up.
        if (target.refusal->code == protocol::error_code::incarnation_mismatch &&
            commit.if_incarnation) {
            _uploads->drop_parts(commit.key, *commit.if_incarnation, commit.part_ids);
        }
        return answer;
    }
    auto settled = answer_from_key(commit, target);
    if (settled) _uploads->drop_parts(commit.key, target.incarnation, commit.part_ids);
    return settled;
}

asio::awaitable<state::apply_result> engine::commit_parts(const parts_commit& commit) {
    state::apply_result answer;
    if (!_uploads) {
        answer.refusal = no_cold_store();
        co_return answer;
    }
    stream_view target = co_await parts_target(commit.key, commit.if_incarnation);
    if (auto answered = answer_before_copy(commit, target)) co_return std::move(*answered);
    auto running = _uploads->begin_run(commit.key);
    if (!running) {
        answer.refusal = commit_in_progress();
        answer.incarnation = target.incarnation;
        co_return answer;
    }
    // A commit of the same snapshot may have published and ended its run
    // since the first look: the second, under the run, sees its publish.
    target = co_await parts_target(commit.key, commit.if_incarnation);
    if (auto answered = answer_before_copy(commit, target)) co_return std::move(*answered);
    const auto copy = [&](runtime::deliver_fn<state::apply_result> done) {
        _uploads->commit(std::move(*running), commit, target.incarnation, std::move(done));
    };
    co_return co_await runtime::await_callback<state::apply_result>(copy);
}

}  // namespace dstream::service

namespace dstream::service {

asio::awaitable<peer_answer> engine::ask_peer(peer_request request) {
    return runtime::await_callback<peer_answer>(
        [this, request = std::move(request)](runtime::deliver_fn<peer_answer> done) mutable {
            _peer_reads->ask(std::move(request), std::move(done));
        });
}

asio::awaitable<stream_view> engine::read_from_peer(const read_request& request,
                                                    std::uint64_t incarnation) {
    peer_request ask;
    ask.what = peer_request::kind::read_source;
    ask.group = group_for(request.key).id();
    ask.key = request.key;
    ask.incarnation = incarnation;
    ask.start = request.start.position;
    ask.max_bytes = std::min(request.max_bytes, peer_read_max_bytes);
    peer_answer answer = co_await ask_peer(std::move(ask));
    stream_view view;
    view.refusal = std::move(answer.refusal);
    view.next = answer.next;
    view.tail = answer.tail;
    if (!answer.bytes.empty()) {
        auto owned = std::make_shared<std::string>(std::move(answer.bytes));
        const char* data = owned->data();
        const std::size_t size = owned->size();
        view.data.push_back(byte_slice{std::move(owned), data, size});
    }
    co_return view;
}

asio::awaitable<peer_answer> engine::answer_peer(peer_request request) {
    peer_answer answer;
    answer.id = request.id;
    if (request.group >= _groups.size() || !_groups[request.group]->where().hosted) {
        answer.refusal = make_error(protocol::error_code::no_leader,
                                    "the asked node holds no replica of the group");
        co_return answer;
    }
    group& g = *_groups[request.group];
    switch (request.what) {
        case peer_request::kind::fork_source: {
            result<fork_source_view> source = co_await current_source(request.key);
            if (source) {
                answer.source = std::move(*source);
            } else {
                answer.refusal = source.err();
            }
            break;
        }
        case peer_request::kind::read_source: {
            if (!g.where().leads && !co_await catch_up(g)) {
                answer.refusal = not_leading_refusal();
                break;
            }
            read_request below;
            below.key = std::move(request.key);
            below.start = protocol::read_start{protocol::read_start::kind::position, request.start};
            below.max_bytes = std::min(request.max_bytes, peer_read_max_bytes);
            below.renews_ttl = false;
            stream_view view = co_await read_stitched(below, request.incarnation);
            answer.refusal = std::move(view.refusal);
            answer.next = view.next;
            answer.tail = view.tail;
            for (const auto& slice : view.data) answer.bytes.append(slice.view());
            break;
        }
        case peer_request::kind::propose: {
            auto decoded = state::decode_command(request.command);
            if (!decoded) {
                answer.refusal = decoded.err();
                break;
            }
            state::command_body body = std::move(decoded->body);
            const state::apply_result r = co_await propose(body, true);
            answer.refusal = r.refusal;
            break;
        }
    }
    co_return answer;
}

}  // namespace dstream::service
