// Determinism of the group state machine (issue 19, item 4): every replica
// of a group must hold byte-identical state at equal log indexes, whether it
// applied every command live or restored a checkpoint and replayed the rest
// (a Raft follower that installed a snapshot). A long seeded command
// sequence is applied both ways; the answers of every command and the
// checkpoint bytes at several points must be equal.
#include <algorithm>
#include <array>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <deque>
#include <limits>
#include <random>
#include <sstream>
#include <string>
#include <utility>
#include <vector>
#include <zlib.h>

#include <gtest/gtest.h>

#include "protocol/content_type.h"
#include "protocol/digest.h"
#include "state/group_state.h"

namespace dstream::state {
namespace {

using protocol::error_code;
using protocol::unix_ms;

constexpr std::uint32_t group_id = 7;

// ------------------------------------------------------------- checkpoints

void append_crc32(std::string& bytes) {
    const auto crc = static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                                      reinterpret_cast<const Bytef*>(bytes.data()),
                                                      static_cast<uInt>(bytes.size())));
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
}

// A checkpoint file's bytes as log::checkpoint_files writes them: the pieces
// of the image, then the CRC-32 of everything before it.
std::string file_bytes(const checkpoint_image& image) {
    std::string bytes;
    for (const auto& piece : image.pieces) bytes.append(piece.data, piece.size);
    append_crc32(bytes);
    return bytes;
}

std::string checkpoint_of(const group_state& g, std::uint64_t index) {
    return file_bytes(g.capture_checkpoint(group_id, index));
}

// Where two checkpoints first differ, for a failure message (they are large).
std::string first_difference(const std::string& a, const std::string& b,
                             const char* a_name = "live", const char* b_name = "restored") {
    std::size_t i = 0;
    while (i < a.size() && i < b.size() && a[i] == b[i]) ++i;
    std::ostringstream o;
    o << "sizes " << a.size() << " and " << b.size() << ", first difference at byte " << i;
    const auto around = [&](const std::string& s) {
        const std::size_t from = i < 24 ? 0 : i - 24;
        std::string out;
        for (std::size_t j = from; j < std::min(s.size(), i + 24); ++j) {
            const char c = s[j];
            out += (c >= 0x20 && c < 0x7f) ? c : '.';
        }
        return out;
    };
    o << "\n  " << a_name << ": [" << around(a) << "]\n  " << b_name << ": [" << around(b) << "]";
    return o.str();
}

// ------------------------------------------------------------- answers

template <typename T>
void put(std::ostringstream& o, const char* name, const std::optional<T>& v) {
    o << ' ' << name << '=';
    if (v) {
        o << *v;
    } else {
        o << '-';
    }
}

void put(std::ostringstream& o, const char* name, const std::optional<fork_origin>& f) {
    o << ' ' << name << '=';
    if (f) {
        o << f->source_key << '/' << f->source_incarnation << '@' << f->offset << '#'
          << f->reference;
    } else {
        o << '-';
    }
}

// Everything an answer says, as text: two replicas must say the same.
std::string render(const apply_result& r) {
    std::ostringstream o;
    if (r.refusal) {
        o << "refusal=" << protocol::wire_code(r.refusal->code) << " (" << r.refusal->message
          << ')';
    }
    o << " kind=" << static_cast<int>(r.kind) << " producer_write=" << r.producer_write
      << " receipt_evicted=" << r.receipt_evicted << " outcome=" << r.producer_outcome;
    put(o, "closed_epoch", r.closed_epoch);
    o << " closed_seq=" << r.closed_seq;
    put(o, "incarnation", r.incarnation);
    o << " content_type=" << r.content_type;
    put(o, "ttl", r.expiry.ttl_seconds);
    put(o, "expires_at", r.expiry.expires_at);
    o << " range=" << r.start_offset << '-' << r.next_offset << " closed=" << r.closed;
    put(o, "producer_epoch", r.producer_epoch);
    put(o, "producer_seq", r.producer_seq);
    put(o, "expected_seq", r.expected_seq);
    put(o, "received_seq", r.received_seq);
    put(o, "last_stream_seq", r.last_stream_seq);
    put(o, "snapshot_offset", r.snapshot_offset);
    o << " snapshot_digest=" << r.snapshot_digest;
    put(o, "retained", r.retained_offset);
    o << " garbage=[";
    for (const auto& g : r.garbage_objects) o << g << ' ';
    o << ']';
    put(o, "origin", r.origin);
    put(o, "released", r.released);
    o << " wakes=" << r.wakes_readers << " rewrote=" << r.rewrote_history
      << " already_restored=" << r.already_restored << " rewritten=[";
    for (const auto& w : r.rewritten) {
        o << w.key;
        put(o, " before", w.before);
        put(o, " incarnation", w.incarnation);
        put(o, " previous", w.previous_incarnation);
        o << " inherited=" << w.inherited_offset << " tail=" << w.tail << "; ";
    }
    o << ']';
    return o.str();
}

const char* type_name(const command_body& body) {
    static constexpr std::array<const char*, 12> names = {
        "init_group",      "create_stream", "append",           "delete_stream",
        "expire_stream",   "flush_chunk",   "publish_snapshot", "retain",
        "rewrite_history", "add_fork_ref",  "drop_fork_ref",    "restore_group"};
    return names.at(body.index());
}

// ------------------------------------------------------------- the history

// The stream that collects more producers than it keeps (extensions 5.6).
const std::string crowded = "d/crowded";

// A seeded proposer: each command is made as a leader that sees the live
// state would make it (valid flush frontiers, real incarnations, a fork's
// reference before its create), with a share of stale, conflicting and
// refused ones. Its clock mostly moves on by 0-2 ms (ties on purpose),
// sometimes steps back (a new leader behind the old one), sometimes jumps an
// hour or more ahead (so idle producers may be evicted). The crowded stream
// gets new producers in bursts within one millisecond: eviction picks among
// producers tied on their last write.
class history {
public:
    explicit history(std::uint64_t seed) : _rng(seed) {
        for (int i = 0; i < 64; ++i) _keys.push_back("d/s" + std::to_string(i));
    }

    command next(const group_state& live) {
        if (_first) {
            _first = false;
            return command{_now, init_group{_rng() | 1}};
        }
        if (!_queued.empty()) {
            command_body body = std::move(_queued.front());
            _queued.pop_front();
            return command{tick(), std::move(body)};
        }
        if (_burst > 0) {
            --_burst;
            return command{_now, crowded_claim()};  // the same millisecond
        }
        const unix_ms now = tick();
        if (live.find(crowded) == nullptr && !live.retired(crowded)) {
            create_stream c;
            c.key = crowded;
            c.content_type = "text/plain";
            return command{now, c};
        }
        const auto roll = pick(1000);
        if (roll < 15) {
            _burst = 16 + pick(48);
            return command{now, crowded_claim()};
        }
        if (roll < 130) return command{now, crowded_write(live)};
        return command{now, stream_command(live, now)};
    }

    // What the command answered: a fork removed for good releases its
    // source's reference, which the engine then drops (as it does).
    void observe(const apply_result& r) {
        if (r.released) {
            _queued.push_back(drop_fork_ref{r.released->source_key, r.released->source_incarnation,
                                            r.released->reference});
        }
    }

    std::size_t steps_back = 0;
    std::size_t jumps = 0;

private:
    std::uint64_t pick(std::uint64_t n) { return n == 0 ? 0 : _rng() % n; }
    bool chance(std::uint64_t percent) { return pick(100) < percent; }

    unix_ms tick() {
        const auto roll = pick(1000);
        if (roll < 30) {
            ++steps_back;
            _now -= static_cast<unix_ms>(1 + pick(20'000));
        } else if (roll < 38) {
            ++jumps;
            _now += static_cast<unix_ms>(protocol::producer_min_keep_ms + pick(3'600'000));
        } else {
            _now += static_cast<unix_ms>(pick(3));
        }
        return _now;
    }

    std::optional<protocol::body_digest> maybe_digest() {
        if (!chance(30)) return std::nullopt;
        protocol::body_digest d{};
        d[0] = static_cast<std::uint8_t>(pick(3));
        return d;
    }

    // Ids of one length, so that their order is their number's.
    static std::string crowded_id(std::size_t i) {
        std::string n = std::to_string(i);
        return "c" + std::string(n.size() < 5 ? 5 - n.size() : 0, '0') + n;
    }

    append crowded_claim() {
        append a;
        a.key = crowded;
        a.content_type = "text/plain";
        a.body = "c";
        a.producer = producer_key{crowded_id(_crowded_seq.size()), 0, 0, {}};
        _crowded_seq.push_back(1);
        return a;
    }

    // A crowded producer's next write, as it believes: it does not know
    // whether the stream still holds its state.
    append crowded_write(const group_state& live) {
        append a;
        a.key = crowded;
        a.content_type = "text/plain";
        a.body = "w";
        if (_crowded_seq.empty()) return crowded_claim();
        const std::size_t i = pick(_crowded_seq.size());
        std::uint64_t seq = _crowded_seq[i]++;
        if (chance(10) && seq > 0) seq -= 1;  // a retry of the last write
        a.producer = producer_key{crowded_id(i), 0, seq, {}};
        if (chance(30)) {
            if (const stream* s = live.find(crowded)) a.if_incarnation = s->incarnation;
        }
        return a;
    }

    const std::string& any_key() { return _keys[pick(_keys.size())]; }

    // Mostly a live stream's key: requests name streams that exist.
    const std::string& live_key(const group_state& live) {
        for (int tries = 0; tries < 6; ++tries) {
            const std::string& k = any_key();
            if (live.find(k) != nullptr) return k;
        }
        return any_key();
    }

    std::string body_for(bool json) {
        std::string b;
        const std::size_t want = 1 + pick(chance(10) ? 3000 : 120);
        if (json) {
            while (b.size() < want) b += "{\"n\":" + std::to_string(pick(1000)) + "}\n";
            if (chance(10)) b.pop_back();  // ends inside a message
        } else {
            b.assign(want, static_cast<char>('a' + pick(26)));
        }
        return b;
    }

    std::optional<boundary_check> boundary_for(const stream* s) {
        if (s == nullptr || chance(30)) return std::nullopt;
        return boundary_check{chance(80) ? s->incarnation : s->incarnation + 1, chance(60)};
    }

    command_body stream_command(const group_state& live, unix_ms now) {
        const auto roll = pick(100);
        const std::string& k = roll < 12 ? any_key() : live_key(live);
        const stream* s = live.find(k);
        if (roll < 12) {
            create_stream c;
            c.key = k;
            static const std::array<const char*, 3> types = {"text/plain", "application/json",
                                                             "TEXT/Plain"};
            c.content_type = types[pick(types.size())];
            if (s != nullptr && chance(50)) c.content_type = s->content_type;
            const auto e = pick(6);
            if (e < 2) c.expiry.ttl_seconds = 1 + pick(600);
            if (e == 2) c.expiry.expires_at = now + static_cast<unix_ms>(pick(3'600'000));
            if (s != nullptr && chance(50)) c.expiry = s->expiry;
            c.closed = chance(8);
            if (chance(60)) c.body = body_for(protocol::is_json_media_type(c.content_type));
            if (s != nullptr && chance(10)) c.if_incarnation = s->incarnation;
            return c;
        }
        if (roll < 42) {
            append a;
            a.key = k;
            const bool json = s != nullptr ? s->json : chance(30);
            a.content_type = s != nullptr && chance(95) ? s->content_type : "text/plain";
            a.body = body_for(json);
            if (chance(4)) a.close = true;
            if (chance(15)) a.stream_seq = std::to_string(pick(200));
            if (chance(3)) {
                a.body.clear();
                a.content_fault = make_error(error_code::invalid_request, "bad body");
            }
            if (s != nullptr && chance(20)) a.if_incarnation = chance(90) ? s->incarnation : 5;
            if (chance(35)) {
                const std::string id = "p" + std::to_string(pick(4));
                std::uint64_t epoch = 0;
                std::uint64_t seq = 0;
                if (s != nullptr) {
                    if (auto it = s->producers.find(id); it != s->producers.end()) {
                        epoch = it->second.epoch;
                        seq = it->second.last_seq + 1;
                        const auto how = pick(20);
                        if (how == 0) seq = it->second.last_seq;  // a retry
                        if (how == 1) seq += 2;                   // a gap
                        if (how == 2) epoch += 1, seq = 0;        // a new epoch
                        if (how == 3 && epoch > 0) epoch -= 1;    // a stale one
                        if (how == 4) seq = 0;                    // the claim again
                    }
                }
                a.producer = producer_key{id, epoch, seq, maybe_digest()};
            }
            return a;
        }
        if (roll < 46) {
            append a;
            a.key = k;
            a.close = true;
            return a;
        }
        if (roll < 54) {
            delete_stream d{k, std::nullopt};
            if (s != nullptr && chance(20)) d.if_incarnation = chance(80) ? s->incarnation : 3;
            return d;
        }
        if (roll < 58) {
            return expire_stream{k, s != nullptr && chance(75) ? s->incarnation : 11};
        }
        if (roll < 67) {
            flush_chunk f;
            f.key = k;
            if (s == nullptr || s->tail() == s->cold_end() || chance(10)) {
                f.incarnation = s != nullptr ? s->incarnation : 1;
                f.start = pick(100);
                f.end = f.start + 1 + pick(100);
            } else {
                f.incarnation = s->incarnation;
                f.start = s->cold_end();
                f.end = f.start + 1 + pick(s->tail() - f.start);
            }
            f.object_key = "chunk/" + k + "/" + std::to_string(f.incarnation) + "/" +
                           std::to_string(f.start) + "-" + std::to_string(f.end);
            return f;
        }
        if (roll < 75) {
            publish_snapshot p;
            p.key = k;
            p.offset = s != nullptr ? pick(s->tail() + 2) : pick(10);
            p.content_type = s != nullptr ? s->content_type : "text/plain";
            p.digest[0] = static_cast<std::uint8_t>(pick(3));
            p.digest[1] = static_cast<std::uint8_t>(p.offset);
            p.size = 3;
            if (chance(20)) {
                p.object_key = "snap/" + k + "/" + std::to_string(p.offset);
            } else {
                p.body = "abc";
            }
            if (s != nullptr && chance(15)) p.if_incarnation = s->incarnation;
            p.boundary = boundary_for(s);
            return p;
        }
        if (roll < 82) {
            retain r;
            r.key = k;
            if (s != nullptr && s->snapshot && chance(50)) {
                r.offset = s->snapshot->offset;
            } else {
                r.offset = s != nullptr ? pick(s->tail() + 1) : pick(10);
            }
            if (s != nullptr && chance(10)) r.if_incarnation = s->incarnation;
            r.boundary = boundary_for(s);
            return r;
        }
        if (roll < 85) {
            // A fork: its source's reference first, then (usually) its create.
            const std::string& fork_key = any_key();
            if (s == nullptr || fork_key == k) return append{k, "text/plain", "x"};
            const std::uint64_t offset = pick(s->tail() + 1);
            const std::uint64_t reference = _next_reference++;
            _refs.push_back(drop_fork_ref{k, s->incarnation, reference});
            if (chance(85)) {
                create_stream c;
                c.key = fork_key;
                c.content_type = s->content_type;
                if (chance(50)) c.body = body_for(s->json);
                c.fork = fork_origin{k, s->incarnation, offset, reference};
                _queued.push_back(std::move(c));
            }
            return add_fork_ref{k, s->incarnation, offset, fork_key, reference};
        }
        if (roll < 87 && !_refs.empty()) {
            // A reference whose fork failed or went away (or a repeat).
            return _refs[pick(_refs.size())];
        }
        if (roll < 88 && chance(8)) {
            // A restore of an earlier state of the group (a backup), or an
            // accepted loss; the next backup is the state as of now.
            std::string image = std::exchange(_backup, checkpoint_of(live, 0));
            if (!image.empty() && chance(50)) {
                return restore_group{_rng() | 1, "backup", std::move(image)};
            }
            return rewrite_history{_rng() | 1};
        }
        if (roll < 89 && chance(10)) return init_group{_rng() | 1};  // ignored: drawn once
        append a;
        a.key = k;
        a.content_type = s != nullptr ? s->content_type : "text/plain";
        a.body = body_for(s != nullptr && s->json);
        return a;
    }

    std::mt19937_64 _rng;
    bool _first = true;
    unix_ms _now = 1'760'000'000'000;
    std::vector<std::string> _keys;
    std::deque<command_body> _queued;
    std::uint64_t _next_reference = 1;
    std::vector<drop_fork_ref> _refs;
    std::string _backup;  // an earlier checkpoint of the live state, for a restore
    std::vector<std::uint64_t> _crowded_seq;  // the next seq each crowded producer believes in
    std::uint64_t _burst = 0;                 // claims left in this millisecond's burst
};

group_state restore(const std::string& bytes, std::uint64_t index) {
    std::uint32_t group = 0;
    std::uint64_t restored_index = 0;
    auto restored = group_state::restore_checkpoint(bytes, group, restored_index);
    EXPECT_TRUE(restored.ok()) << restored.err().message;
    EXPECT_EQ(group, group_id);
    EXPECT_EQ(restored_index, index);
    return restored.ok() ? std::move(*restored) : group_state{};
}

// ------------------------------------------------------------- the test

// (a) applies every command live; (b) replays the same commands through the
// codec (as from the log) and, at several points, checkpoints, restores a
// fresh state from the checkpoint's bytes and goes on with that one. At each
// point (and at the end) both checkpoints must be the same bytes, and (c) a
// checkpoint of the restored state must be the bytes it was restored from.
// Every command must get the same answer from both.
TEST(Determinism, LiveAndCheckpointPlusReplayHoldTheSameState) {
    constexpr std::size_t commands = 16'000;
    const auto started = std::chrono::steady_clock::now();
    history h(20'260'519);
    group_state live;
    group_state replica;
    std::vector<std::size_t> points;
    for (std::size_t k = 1; k <= 9; ++k) points.push_back(k * commands / 10 + k * 37);
    std::size_t next_point = 0;

    std::size_t evictions = 0;
    std::size_t tied_evictions = 0;
    std::size_t refusals = 0;
    std::array<std::size_t, 12> by_type{};
    std::size_t checkpoints = 0;
    for (std::size_t i = 1; i <= commands; ++i) {
        const command cmd = h.next(live);
        ++by_type.at(cmd.body.index());
        // A new producer on the full crowded stream: applied, it evicts one.
        const append* write = std::get_if<append>(&cmd.body);
        const stream* c = live.find(crowded);
        const bool newcomer = write != nullptr && write->key == crowded && write->producer &&
                              c != nullptr &&
                              c->producers.size() == protocol::max_producers_per_stream &&
                              !c->producers.contains(write->producer->id);
        // Ties among the longest-idle producers, as eviction sees them.
        std::size_t tied = 0;
        if (newcomer) {
            unix_ms oldest = std::numeric_limits<unix_ms>::max();
            for (const auto& [id, p] : c->producers) oldest = std::min(oldest, p.last_write_ms);
            for (const auto& [id, p] : c->producers) tied += p.last_write_ms == oldest;
        }

        const unix_ms applied_before = live.applied_now();
        const apply_result a = live.apply(command(cmd), i);
        ASSERT_EQ(live.applied_now(), std::max(applied_before, cmd.now_ms))
            << "applied time goes back at command " << i;
        auto decoded = decode_command(encode_command(cmd));
        ASSERT_TRUE(decoded.ok()) << decoded.err().message;
        const apply_result b = replica.apply(std::move(*decoded), i);
        ASSERT_EQ(render(a), render(b))
            << "command " << i << " (" << type_name(cmd.body) << " at " << cmd.now_ms
            << ") answered differently after " << checkpoints << " checkpoint restores";
        h.observe(a);

        refusals += a.refusal.has_value();
        if (newcomer && !a.refusal && a.kind == write_kind::appended) {
            ++evictions;
            tied_evictions += tied > 1;
        }

        if (next_point < points.size() && i == points[next_point]) {
            ++next_point;
            const std::string at_live = checkpoint_of(live, i);
            const std::string at_replica = checkpoint_of(replica, i);
            ASSERT_TRUE(at_live == at_replica) << "checkpoints differ at index " << i << ": "
                                               << first_difference(at_live, at_replica);
            group_state restored = restore(at_replica, i);
            const std::string again = checkpoint_of(restored, i);
            ASSERT_TRUE(again == at_replica)
                << "a checkpoint of the state restored at index " << i
                << " is not the checkpoint it was restored from: "
                << first_difference(at_replica, again, "restored from", "captured again");
            replica = std::move(restored);
            ++checkpoints;
        }
    }
    const std::string end_live = checkpoint_of(live, commands);
    const std::string end_replica = checkpoint_of(replica, commands);
    ASSERT_TRUE(end_live == end_replica)
        << "checkpoints differ at the end: " << first_difference(end_live, end_replica);

    // The history covered what it is for.
    EXPECT_EQ(checkpoints, points.size());
    EXPECT_GT(evictions, 300u);
    EXPECT_GT(tied_evictions, 300u);
    EXPECT_GT(h.steps_back, 100u);
    EXPECT_GT(h.jumps, 20u);
    EXPECT_GT(refusals, 500u);
    for (std::size_t t = 0; t < by_type.size(); ++t) {
        EXPECT_GT(by_type[t], 0u) << "no " << t << " command";
    }
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
    std::printf(
        "[ determinism ] %zu commands, %zu checkpoint restores, %zu evictions (%zu among ties), "
        "%zu refusals, %zu steps back, %zu jumps, %lld ms\n",
        commands, checkpoints, evictions, tied_evictions, refusals, h.steps_back, h.jumps,
        static_cast<long long>(ms));
}

// Eviction (extensions 5.6) drops the longest-idle producer; among producers
// idle equally long, the smallest id, whatever the map's history.
TEST(Determinism, EvictionTiesGoToTheSmallestProducerId) {
    group_state g;
    std::uint64_t index = 0;
    const unix_ms t = 1'760'000'000'000;
    g.apply(command{t, init_group{99}}, ++index);
    create_stream c;
    c.key = crowded;
    c.content_type = "text/plain";
    g.apply(command{t, c}, ++index);
    // Inserted in descending id order, so no map order hands out the smallest id by chance.
    for (std::size_t i = protocol::max_producers_per_stream; i > 0; --i) {
        append a;
        a.key = crowded;
        a.content_type = "text/plain";
        a.body = "x";
        a.producer = producer_key{"p" + std::to_string(10'000 + i), 0, 0, {}};
        ASSERT_FALSE(g.apply(command{t, a}, ++index).refusal);
    }
    const std::string bytes = checkpoint_of(g, index);
    group_state restored = restore(bytes, index);
    for (group_state* state : {&g, &restored}) {
        std::uint64_t at = index;
        for (int n = 0; n < 3; ++n) {
            append a;
            a.key = crowded;
            a.content_type = "text/plain";
            a.body = "y";
            a.producer = producer_key{"q" + std::to_string(n), 0, 0, {}};
            const auto r = state->apply(command{t + protocol::producer_min_keep_ms, a}, ++at);
            ASSERT_FALSE(r.refusal) << r.refusal->message;
        }
        const stream* s = state->find(crowded);
        EXPECT_EQ(s->producers.size(), protocol::max_producers_per_stream);
        EXPECT_FALSE(s->producers.contains("p10001"));
        EXPECT_FALSE(s->producers.contains("p10002"));
        EXPECT_FALSE(s->producers.contains("p10003"));
        EXPECT_TRUE(s->producers.contains("p10004"));
        EXPECT_TRUE(s->producers.contains("q2"));
    }
    const std::string live_bytes = checkpoint_of(g, index + 3);
    const std::string restored_bytes = checkpoint_of(restored, index + 3);
    EXPECT_TRUE(live_bytes == restored_bytes) << first_difference(live_bytes, restored_bytes);
}

// ------------------------------------------------------------- applied time

append plain_append(std::string k, std::string body) {
    append a;
    a.key = std::move(k);
    a.content_type = "text/plain";
    a.body = std::move(body);
    return a;
}

create_stream plain_create(std::string k) {
    create_stream c;
    c.key = std::move(k);
    c.content_type = "text/plain";
    return c;
}

// A command applies at max(last applied time, its proposer's clock): a new
// leader whose clock is behind the old one's never moves time back.
TEST(DeterminismTime, AppliedTimeNeverGoesBackwards) {
    group_state g;
    EXPECT_EQ(g.applied_now(), 0);
    g.apply(command{5000, init_group{42}}, 1);
    g.apply(command{5000, plain_create("t/a")}, 2);
    EXPECT_EQ(g.applied_now(), 5000);

    g.apply(command{3000, plain_create("t/b")}, 3);  // the clock stepped back
    const stream* b = g.find("t/b");
    EXPECT_EQ(b->created_at_ms, 5000);
    EXPECT_EQ(b->last_write_ms, 5000);
    EXPECT_EQ(b->incarnation, incarnation_token(42, 5000, 3));
    EXPECT_EQ(g.applied_now(), 5000);

    append a = plain_append("t/a", "x");
    a.producer = producer_key{"p", 0, 0, {}};
    ASSERT_FALSE(g.apply(command{4000, a}, 4).refusal);
    EXPECT_EQ(g.find("t/a")->last_write_ms, 5000);
    EXPECT_EQ(g.find("t/a")->producers.at("p").last_write_ms, 5000);

    // A refused command moves time too: it is in the log like any other.
    ASSERT_TRUE(g.apply(command{9000, plain_append("t/none", "x")}, 5).refusal);
    EXPECT_EQ(g.applied_now(), 9000);
    g.apply(command{8000, plain_create("t/c")}, 6);
    EXPECT_EQ(g.find("t/c")->created_at_ms, 9000);
    g.apply(command{9500, plain_append("t/c", "y")}, 7);
    EXPECT_EQ(g.find("t/c")->last_write_ms, 9500);
    EXPECT_EQ(g.applied_now(), 9500);
}

// Header: magic, u32 group, u64 index, u64 history id, u64 applied time.
constexpr std::size_t applied_now_at = 8 + 4 + 8 + 8;

std::uint64_t u64_at(const std::string& bytes, std::size_t at) {
    std::uint64_t v = 0;
    for (std::size_t i = 0; i < 8; ++i)
        v |= std::uint64_t{static_cast<std::uint8_t>(bytes[at + i])} << (8 * i);
    return v;
}

// A state whose applied time (the refused write at 9000) is later than any
// time a stream or producer recorded (7000).
group_state timed_state() {
    group_state g;
    g.apply(command{5000, init_group{42}}, 1);
    g.apply(command{6000, plain_create("t/a")}, 2);
    append a = plain_append("t/a", "x");
    a.producer = producer_key{"p", 0, 0, {}};
    g.apply(command{7000, a}, 3);
    g.apply(command{9000, plain_append("t/none", "x")}, 4);
    return g;
}

TEST(DeterminismTime, CheckpointKeepsTheAppliedTime) {
    const group_state g = timed_state();
    const std::string bytes = checkpoint_of(g, 4);
    EXPECT_EQ(bytes.substr(0, 8), "DSTRCKP3");
    EXPECT_EQ(u64_at(bytes, applied_now_at), 9000u);
    group_state restored = restore(bytes, 4);
    EXPECT_EQ(restored.applied_now(), 9000);
    // Replay after the restore applies at the restored time, as live would.
    restored.apply(command{8000, plain_create("t/b")}, 5);
    EXPECT_EQ(restored.find("t/b")->created_at_ms, 9000);
    EXPECT_EQ(restored.find("t/b")->incarnation, incarnation_token(42, 9000, 5));
}

// A version 2 checkpoint is the version 3 one without the applied time: it
// restores with the latest time its streams and producers recorded.
TEST(DeterminismTime, VersionTwoCheckpointRestoresTheLatestRecordedTime) {
    const group_state g = timed_state();
    const std::string v3 = checkpoint_of(g, 4);
    std::string v2 = v3.substr(0, v3.size() - 4);
    v2.erase(applied_now_at, 8);
    v2.replace(0, 8, "DSTRCKP2");
    append_crc32(v2);
    group_state restored = restore(v2, 4);
    EXPECT_EQ(restored.applied_now(), 7000);
    // Everything else is the same state: its capture differs only in the time.
    std::string again = checkpoint_of(restored, 4);
    EXPECT_EQ(u64_at(again, applied_now_at), 7000u);
    std::string expected = v3.substr(0, v3.size() - 4);
    for (std::size_t i = 0; i < 8; ++i)
        expected[applied_now_at + i] = static_cast<char>((std::uint64_t{7000} >> (8 * i)) & 0xff);
    append_crc32(expected);
    EXPECT_TRUE(again == expected) << first_difference(expected, again, "expected", "captured");
}

// A version 1 checkpoint (before forks): the same rule.
TEST(DeterminismTime, VersionOneCheckpointRestoresTheLatestRecordedTime) {
    binary_writer w;
    w.put_u32(group_id);
    w.put_u64(12);  // index
    w.put_u64(42);  // history id
    w.put_u64(1);   // one stream
    w.put_string("t/old");
    w.put_string("text/plain");
    w.put_u8(0);  // ttl
    w.put_u8(0);  // expires at
    w.put_u64(incarnation_token(42, 6000, 2));
    w.put_u64(6000);  // created
    w.put_u64(6500);  // last write
    w.put_u8(0);      // closed
    w.put_u8(0);      // last Stream-Seq
    w.put_u8(0);      // previous incarnation
    w.put_u64(0);     // inherited offset
    w.put_u64(0);     // retained
    w.put_u8(0);      // snapshot
    w.put_u8(0);      // epoch floor
    w.put_u64(1);     // one producer
    w.put_string("p");
    w.put_u64(0);  // epoch
    w.put_u64(0);  // last seq
    w.put_u64(0);  // last start
    w.put_u64(2);  // last end
    w.put_u8(0);   // last closed
    put_identity(w, std::nullopt);
    put_identity(w, std::nullopt);
    w.put_u8(0);      // closed epoch
    w.put_u64(0);     // closed seq
    w.put_u64(7100);  // last write
    w.put_u8(1);      // above floor
    w.put_u8(0);      // closed by history
    w.put_u64(0);     // chunks
    w.put_u64(0);     // hot start
    w.put_u64(2);     // hot length
    std::string bytes = "DSTRCKP1" + std::move(w).take() + "ab";
    append_crc32(bytes);
    group_state restored = restore(bytes, 12);
    EXPECT_EQ(restored.applied_now(), 7100);
    ASSERT_NE(restored.find("t/old"), nullptr);
    EXPECT_EQ(restored.find("t/old")->tail(), 2u);
}

}  // namespace
}  // namespace dstream::state
