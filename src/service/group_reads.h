#pragma once
// The reads of one group's streams, from the state its replica applied: any
// replica answers them (extensions 9.2: `consistency=local`; a leader read
// first confirms the leadership). A stream whose lifetime ran out is absent
// to every read; telling the leader to propose its removal is the caller's
// (`expired`). Runs on the group's strand.
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/clock.h"
#include "service/live_update.h"
#include "service/stream_service.h"
#include "state/group_state.h"

namespace dstream::service {

// A piece of a read that lives in a cold chunk object.
struct cold_piece {
    std::string object_key;
    std::uint64_t object_size = 0;
    std::uint64_t offset = 0;  // within the object
    std::uint64_t length = 0;
};

// The part of a fork's read that lies below its fork point: the bytes
// [start, end) of its source, read from the source's group (base protocol 4.2).
struct inherited_range {
    std::string source_key;
    std::uint64_t source_incarnation = 0;
    // The fork's reference on its source, by which the source's group finds
    // it (state::group_state::find_source): unlike the token, it survives a
    // rewrite of the source's history (extensions 2.4).
    std::uint64_t reference = 0;
    std::uint64_t start = 0;
    std::uint64_t end = 0;
};

// A read as the group can answer it on its strand: the view with its hot
// slices, the cold pieces that precede them, to be loaded off the strand, and
// for a fork the inherited bytes that precede both.
struct read_plan {
    stream_view view;
    std::vector<cold_piece> cold;
    std::optional<inherited_range> inherited;
};

// What a fork's creation needs to know of its source (base protocol 4.2).
struct fork_source_view {
    std::uint64_t incarnation = 0;
    std::string content_type;
    bool json = false;
    protocol::expiry_config expiry;
    std::uint64_t tail = 0;
};

class group_reads {
public:
    // Called once per stream whose lifetime ran out, as a read finds it.
    using expired_handler = std::function<void(const std::string& key, std::uint64_t incarnation)>;

    group_reads(const state::group_state& state, const runtime::clock& clock,
                expired_handler expired);

    // `as_source_of` set: a read on behalf of a fork of the source of that
    // incarnation, which may be retired and renews nothing.
    read_plan read(const read_request& request,
                   std::optional<std::uint64_t> as_source_of = std::nullopt);
    result<fork_source_view> fork_source(const std::string& key);
    std::optional<state::apply_result> answer_before_body(const state::append& headers);
    // A snapshot read: the view, and the object holding the body when it is
    // cold (the engine loads [first, first + length) of it off the strand).
    snapshot_view read_snapshot(const std::string& key, std::uint64_t offset, std::uint64_t first,
                                std::uint64_t length, std::string& object_key);
    bootstrap_view bootstrap(const std::string& key, std::uint64_t max_update_bytes,
                             std::string& snapshot_object_key);

    // The read `request` makes, when it reaches the tail from hot bytes
    // alone and so can be handed to every reader making the same one.
    std::shared_ptr<const live_update> live_answer(const read_request& request);
    // Whether the stream `request` reads already has something for it (bytes
    // past its position, a close, a refusal), so its reader must not wait.
    bool has_news(const read_request& request);

    // A stream whose lifetime ran out is absent; nothing when it is not live.
    const state::stream* live_stream(const std::string& key, protocol::unix_ms now);
    bool lifetime_over(const std::string& key, const state::stream& s, protocol::unix_ms now) const;
    // The streams whose lifetime ran out by `now`.
    std::vector<std::pair<std::string, std::uint64_t>> expired_streams(protocol::unix_ms now) const;
    // A node that starts counts as a read of every stream with a sliding TTL:
    // the reads that renewed them before were not logged.
    void renew_all(protocol::unix_ms now);
    // Whether this replica leads the group: only the leader hears of every
    // read that renews a sliding TTL (a follower tells it of its own), so a
    // follower that finds one run out leaves the answer to the leader.
    void leading(bool leads) { _leads = leads; }
    // On the leader: a follower's read renewed `key`'s sliding TTL now.
    void renewed(const std::string& key, protocol::unix_ms now) { _last_read_ms[key] = now; }
    // The stream is gone: its renewals go with it.
    void forget(const std::string& key) { _last_read_ms.erase(key); }

private:
    // The refusal for a request on a stream that is not live (404, or 410
    // when it is retired for its forks).
    error missing(const std::string& key) const;
    // A follower's sliding TTL of `key` ran out by the reads it saw: the
    // leader, which saw them all, answers (NO_LEADER, which the edge turns
    // into a redirect to it).
    bool expiry_unknown_here(const std::string& key) const;

    const state::group_state& _state;
    const runtime::clock& _clock;
    expired_handler _expired;
    // Not replicated: the last read of each stream renews its sliding TTL
    // without a log entry per read.
    std::unordered_map<std::string, protocol::unix_ms> _last_read_ms;
    bool _leads = true;
};

}  // namespace dstream::service
