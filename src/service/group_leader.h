#pragma once
// What only the leader of a group does: proposes commands (stamped with its
// clock, encoded, handed to the log) and answers each with the apply of the
// entry committed at its index; and runs the leader's jobs, which stop the
// moment it steps down: TTL expiry proposals, cold flushes (the object
// first, then the command that references it), the removal of objects
// applies made garbage, a fork's release of its source in another group,
// and the group's first command (its history id). Runs on the group's
// strand; submit() from any thread.
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "base/reusable_queue.h"
#include "base/unique_function.h"
#include "log/group_log.h"
#include "runtime/clock.h"
#include "runtime/compact_strand.h"
#include "runtime/random.h"
#include "service/cold_tier.h"
#include "service/flush_backoff.h"
#include "service/group_reads.h"
#include "service/group_replica.h"
#include "state/command.h"

namespace dstream::service {

using group_strand = runtime::compact_strand;
using write_done = unique_function<void(state::apply_result)>;
// Hands a command to the group its key hashes to (the engine routes it).
using command_forwarder = std::function<void(state::command_body)>;

struct service_metrics;

class group_leader {
public:
    struct inputs {
        const runtime::clock& clock;
        runtime::random_source& random;
        const cold_tier& cold;
        service_metrics& metrics;
    };
    group_leader(group_strand strand, group_replica& replica, group_reads& reads, inputs in);

    void attach_log(log::group_log& log) { _log = &log; }
    void set_forwarder(command_forwarder forward) { _forward = std::move(forward); }

    // Any thread: propose()s `body` on the group's strand. Proposals queued
    // while a post for them is pending share it, so a busy group takes one
    // post per burst, not one per write.
    void submit(state::command_body&& body, write_done done);
    // Any thread: submit() for a request's coroutine, whose `done` only
    // posts its resumption. On the group's own thread the proposal is made
    // at once, without the queue's lock and post (a request is no group's
    // work, so nothing of the group is under way on the stack).
    void submit_from_request(state::command_body&& body, write_done done);
    // Any thread: like submit(), but on a replica that does not lead, the
    // group's leader proposes it (group_log::forward) and the apply of its
    // entry here answers it: for a command one group sends another (a fork's
    // reference on its source), whose leader may be on another node.
    void submit_via_leader(state::command_body&& body, write_done done);
    // On the strand: stamps, encodes and proposes `body`; `done` gets the
    // apply of its entry, or the refusal.
    void propose(state::command_body&& body, write_done done);

    // The log's side.
    void leadership_changed(const log::leadership& now);
    // The command at `index` of `term` applied with `applied`; answers the
    // proposal it was (its result moves to the proposer), and runs the
    // leader's follow-ups of the change.
    void applied(std::uint64_t index, std::uint64_t term, group_replica::applied& applied);
    // The append this replica proposed as the entry at `index` of `term`, as
    // it was before encoding; nothing for another command or another's entry.
    // Every field of an append round-trips the codec, so the proposer applies
    // it as every replica applies the decoded entry, without decoding what it
    // encoded.
    std::unique_ptr<state::command> take_proposed(std::uint64_t index, std::uint64_t term);
    void proposals_lost(std::uint64_t from_index, const error& why);
    // A leader's snapshot replaced the log: what was proposed up to `index`
    // may or may not be in it.
    void installed(std::uint64_t index);

    // A stream's lifetime ran out (a read or the sweep found it): its removal
    // is proposed once.
    void expire(const std::string& key, std::uint64_t incarnation);
    // The periodic jobs: expiry sweep, memory pressure.
    void sweep();
    bool leads() const { return _leadership.leads(); }
    const log::leadership& leadership() const { return _leadership; }

private:
    struct pending_entry {
        std::uint64_t index = 0;
        std::uint64_t term = 0;
        write_done done;
        // Only an append's (the hot path): a restore's image is not held
        // twice. Boxed: the queue moves its entries, and a command is large.
        std::unique_ptr<state::command> proposed;
    };
    struct submission {
        state::command_body body;
        write_done done;
        bool via_leader = false;
    };
    void queue(submission&& s);
    void propose_submitted();
    // A follower's proposal by way of the leader; its entry then waits here
    // for its apply like one proposed here.
    void forward(state::command_body&& body, write_done done);
    void await_entry(std::uint64_t index, std::uint64_t term, write_done done);
    // The refusal when this node cannot propose: NO_LEADER.
    error not_leading() const;
    void answer(write_done& done, state::apply_result&& r);
    void refuse(write_done& done, const error& why);

    // COLD_BACKPRESSURE when `body` would add hot bytes past the group's
    // budget while the cold store fails; nothing otherwise.
    std::optional<error> cold_backpressure(const state::command_body& body);
    bool may_flush() const;
    void maybe_flush(const std::string& key, const state::stream& s);
    void relieve_memory_pressure();
    // Every flush that is due: after an outage, with no append to start them.
    void resume_flushes();
    struct flush_chunk_job {
        std::string key;
        std::uint64_t incarnation = 0;
        std::uint64_t start = 0;
        std::uint64_t end = 0;
        std::string object_key;
        std::vector<byte_slice> slices;
    };
    void start_flush(const std::string& key, const state::stream& s, std::uint64_t end);
    void flush_ended(const std::string& key);
    void flush_next(const std::string& key);
    void finish_flush(flush_chunk_job job, const status& written);
    void remove_garbage(const std::vector<std::string>& objects);

    group_strand _strand;
    group_replica& _replica;
    group_reads& _reads;
    const runtime::clock& _clock;
    runtime::random_source& _random;
    const cold_tier& _cold;
    service_metrics& _metrics;
    log::group_log* _log = nullptr;
    command_forwarder _forward;
    log::leadership _leadership;

    reusable_queue<pending_entry> _pending;
    std::unordered_set<std::string> _expiring;
    // Streams with a chunk flush in flight (at most one each), with the bytes
    // it takes and when it started (monotonic ms), and the bytes' sum.
    struct flush_in_flight {
        std::uint64_t bytes = 0;
        std::uint64_t started_ms = 0;
    };
    std::unordered_map<std::string, flush_in_flight> _flushing;
    std::uint64_t _flushing_bytes = 0;
    bool flush_is_slow() const;
    flush_backoff _flush_backoff;

    std::mutex _submitted_mutex;
    std::vector<submission> _submitted;  // under _submitted_mutex
    bool _submitted_posted = false;      // under _submitted_mutex
    std::vector<submission> _proposing;  // the strand's; keeps its capacity
};

}  // namespace dstream::service
