// Fork creation (base protocol 4.2): the engine resolves the fork point
// against the source, has the source's group reference the fork, then
// creates the fork in its own group. Each step is a message to one group, so
// a source and its fork may live in different groups, whose leaders may be
// on different nodes (the reference goes by way of the source's leader).

#include "protocol/content_type.h"
#include "runtime/await_callback.h"
#include "service/engine.h"

namespace dstream::service {
namespace {

namespace asio = boost::asio;
using protocol::error_code;

state::apply_result refusal(error e) {
    state::apply_result r;
    r.refusal = std::move(e);
    return r;
}

// Names one creation request's reference; unique, so that a failed request
// drops only its own.
std::uint64_t draw_reference(runtime::random_source& random) {
    std::uint64_t id = 0;
    while (id == 0) id = random.next();
    return id;
}

// How far the JSON read for a sub-offset looks at once.
constexpr std::uint64_t sub_offset_read_bytes = 1u << 20;

}  // namespace

asio::awaitable<result<fork_source_view>> engine::fork_source(const std::string& key) {
    using answer = result<fork_source_view>;
    return runtime::await_callback<answer>(
        [&g = group_for(key), key](runtime::deliver_fn<answer> done) mutable {
            asio::post(g.strand(), [&g, key = std::move(key), done = std::move(done)]() mutable {
                done(g.fork_source(key));
            });
        });
}

asio::awaitable<result<fork_source_view>> engine::current_source(const std::string& key) {
    group& g = group_for(key);
    if (!g.where().hosted && _peer_reads != nullptr) {
        peer_request ask;
        ask.what = peer_request::kind::fork_source;
        ask.group = g.id();
        ask.key = key;
        peer_answer answer = co_await ask_peer(std::move(ask));
        if (answer.refusal) co_return *answer.refusal;
        co_return std::move(answer.source);
    }
    // A replica of the source's group that does not lead it reads the source
    // once caught up with its leader: the fork point is then neither past nor
    // short of the tail the leader's apply of the reference checks.
    if (!g.where().leads && !co_await catch_up(g)) {
        co_return make_error(error_code::no_leader,
                             "the leader of the fork source's group cannot be reached from this "
                             "node");
    }
    co_return co_await fork_source(key);
}

asio::awaitable<result<std::uint64_t>> engine::resolve_sub_offset(const fork_request& fork,
                                                                  const fork_source_view& source) {
    const std::uint64_t anchor = fork.offset.value_or(source.tail);
    const auto overshoot = [] {
        return make_error(error_code::invalid_offset,
                          "Stream-Fork-Sub-Offset names a position past the source's data");
    };
    if (!source.json) {
        if (fork.sub_offset > source.tail - anchor) co_return overshoot();
        co_return anchor + fork.sub_offset;
    }
    // JSON: the position after the sub_offset-th message from the anchor.
    std::uint64_t remaining = fork.sub_offset;
    std::uint64_t at = anchor;
    const std::optional<std::uint64_t> incarnation = source.incarnation;
    while (at < source.tail) {
        read_request piece;
        piece.key = fork.source_key;
        piece.start = protocol::read_start{protocol::read_start::kind::position, at};
        piece.max_bytes = std::min(sub_offset_read_bytes, source.tail - at);
        piece.renews_ttl = false;
        stream_view view = co_await read_stitched(piece, incarnation);
        if (view.refusal) co_return *view.refusal;
        for (const auto& slice : view.data) {
            for (const char c : slice.view()) {
                ++at;
                if (c == '\n' && --remaining == 0) co_return at;
            }
        }
        if (view.data.empty()) break;
    }
    co_return overshoot();
}

asio::awaitable<state::apply_result> engine::create_fork(state::create_stream& create,
                                                         const fork_request& fork) {
    const result<fork_source_view> source = co_await current_source(fork.source_key);
    if (!source) co_return refusal(source.err());
    if (fork.content_type_given &&
        !protocol::same_media_type(create.content_type, source->content_type)) {
        co_return refusal(make_error(error_code::content_type_mismatch,
                                     "Content-Type differs from the fork source's content type"));
    }
    create.content_type = source->content_type;
    if (fork.offset && *fork.offset > source->tail) {
        co_return refusal(make_error(error_code::invalid_offset,
                                     "Stream-Fork-Offset is beyond the source's tail"));
    }
    std::uint64_t point = fork.offset.value_or(source->tail);
    if (fork.sub_offset > 0) {
        const result<std::uint64_t> resolved = co_await resolve_sub_offset(fork, *source);
        if (!resolved) co_return refusal(resolved.err());
        point = *resolved;
    }
    // A fork without an expiry of its own inherits its source's (TTL value or
    // Expires-At); one with its own keeps it, shorter or longer.
    if (!create.expiry.ttl_seconds && !create.expiry.expires_at) create.expiry = source->expiry;

    const state::fork_origin origin{fork.source_key, source->incarnation, point, draw_reference(_random)};
    state::command_body reference = state::add_fork_ref{
        origin.source_key, origin.source_incarnation, point, create.key, origin.reference};
    const state::apply_result held = co_await propose(reference, true);
    if (held.refusal) co_return held;

    create.fork = origin;
    state::command_body body = std::move(create);
    state::apply_result created = co_await write(body);
    if (created.kind != state::write_kind::created) {
        // Refused, or the fork existed already under another reference.
        forward(
            state::drop_fork_ref{origin.source_key, origin.source_incarnation, origin.reference});
    }
    co_return created;
}

}  // namespace dstream::service
