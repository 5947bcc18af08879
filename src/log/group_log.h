#pragma once
// The seam between a group's state machine and its replicated log. The log
// is a Raft log (src/replication) on every node: one voter on a single node,
// three or five in a cluster; the group sees only this header.
//
// Every replica is told of every committed entry, in index order, whether or
// not it passed through this node's proposer, and applies it (the one apply
// path). Only the leader proposes; a proposal's answer is the apply of the
// entry committed at its index, when that entry carries its term.
//
// Threads: every call and every notification on the group's executor.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_function.h"
#include "state/group_state.h"

namespace dstream::log {

enum class role : std::uint8_t { follower, candidate, leader };

// "follower", "candidate", "leader": for logs and status pages.
constexpr std::string_view name(role r) {
    switch (r) {
        case role::leader:
            return "leader";
        case role::candidate:
            return "candidate";
        case role::follower:
            break;
    }
    return "follower";
}

// Who leads the group, as far as this node knows.
struct leadership {
    role what = role::follower;
    std::uint64_t term = 0;
    std::uint64_t leader = 0;  // the leader's node id; 0 when none is known

    bool leads() const { return what == role::leader; }
    bool operator==(const leadership&) const = default;
};

// What the log made of a proposal.
struct proposal {
    enum class outcome : std::uint8_t {
        accepted,    // it is in the log at `index` in `term`; the apply of that entry answers it
        not_leader,  // this node does not lead: nothing was written (`leader` names who does)
        refused,     // this node leads but refused it before writing it (`refusal`)
    } what = outcome::not_leader;
    std::uint64_t index = 0;
    std::uint64_t term = 0;
    leadership leader;
    std::optional<error> refusal;
};

// An entry of the log once it is committed.
struct committed_entry {
    std::uint64_t index = 0;
    std::uint64_t term = 0;
    std::string_view bytes;  // an encoded command (state/command.h)
};

// What the log tells its group, on the group's executor.
class log_listener {
public:
    virtual ~log_listener() = default;
    // The next committed command, in index order, on every replica.
    virtual void committed(const committed_entry& entry) = 0;
    // Every entry committed so far, through `index`, has been delivered: the
    // end of a batch of committed() calls.
    virtual void committed_through(std::uint64_t index) = 0;
    // This node's role, the term or the known leader changed.
    virtual void leadership_changed(const leadership& now) = 0;
    // Proposals from `from_index` on were never written anywhere, and never
    // will be (a one-voter log whose write failed): each is refused with `why`.
    virtual void proposals_lost(std::uint64_t from_index, const error& why) = 0;
    // A leader's snapshot replaced the whole log: the group's state becomes
    // the one of `image` (a checkpoint image), as of `index` of `term`.
    virtual void install(std::uint64_t index, std::uint64_t term, std::string_view image) = 0;
    // On the leader: a follower's note (group_log::tell_leader).
    virtual void told(std::string_view /*note*/) {}
};

class group_log {
public:
    using confirmed_handler = unique_function<void(const leadership& who, bool confirmed)>;
    using saved_handler = unique_function<void(status)>;
    using forwarded_handler = unique_function<void(proposal)>;

    virtual ~group_log() = default;

    // Before start(): where notifications go.
    virtual void attach(log_listener& listener) = 0;
    // Starts the log from what it holds; the committed entries it has are
    // delivered from here on.
    virtual void start() = 0;
    // Leader only: appends an encoded command.
    virtual proposal propose(std::string bytes) = 0;
    // Completes once this node has proved with a majority of voters that it
    // still leads, and has applied every entry committed when it was asked
    // (a linearizable read's barrier, extensions 9.2); otherwise `confirmed`
    // is false and `who` names the leader it knows. Concurrent calls share
    // one round.
    virtual void confirm_leadership(confirmed_handler done) = 0;
    // Completes once this replica has applied every entry that was committed
    // when it was asked, as the group's leader proved with a majority (Raft's
    // read index): on the leader, confirm_leadership(); on a follower, by
    // asking the leader for its confirmed commit index. `confirmed` is false
    // when no leader answered in time. A log with no followers' side to it
    // (a single voter, the simulation's) does what confirm_leadership() does.
    virtual void catch_up(confirmed_handler done) { confirm_leadership(std::move(done)); }
    // A follower's note for the group's leader (told() there), such as a read
    // that renewed a sliding TTL, which only the leader's expiry acts on.
    // Lost when no leader is known or the message is; a leader tells itself
    // nothing (its own reads are its own).
    virtual void tell_leader(std::string /*note*/) {}
    // A proposal that the group's leader makes for this replica, wherever it
    // runs: a command one group sends another (a fork's reference on its
    // source) when this node does not lead the receiving group. `done` gets
    // the leader's proposal: accepted (the entry's index and term; its apply
    // here answers it), not_leader, or refused, OUTCOME_UNKNOWN when no
    // answer came in time. A log without followers' side proposes it itself.
    virtual void forward(std::string bytes, forwarded_handler done) {
        done(propose(std::move(bytes)));
    }
    // Snapshot capture: the group's state as of its applied `index` (of
    // `term`), to keep as the log's snapshot; once it is durable the log
    // forgets the entries it covers, and `done` runs.
    virtual void save_snapshot(std::uint64_t index, std::uint64_t term,
                               state::checkpoint_image image, saved_handler done) = 0;
    virtual leadership current() const = 0;
    // Stops notifications and timers (the node stops).
    virtual void stop() = 0;
};

}  // namespace dstream::log
