#pragma once
// One replica of one group's Raft log: libraft 0.22's raft_step (through the
// C shim raft/raft_core.h) with the log entries this node keeps, what it
// writes to its disk (raft_storage) and sends to its peers (raft_transport),
// and the committed entries it hands the state machine (raft_events).
//
// It is synchronous and deterministic: every input is a call carrying the
// time (milliseconds on a monotonic clock), every output a call on one of the
// three interfaces. The server drives it from the group's strand with a timer
// and the node's WAL (raft_group_log); the simulation drives many of them on
// virtual time (tests/sim).
//
// Durability (the Raft paper, 5.1 and Figure 2): the term and the vote are
// durable before any message that depends on them leaves (messages wait for
// the hard state written before them); an entry counts towards a commit on
// this node only once the storage says it is durable; a follower acknowledges
// only what is durable (libraft sends that answer after the persisted report);
// a replica applies only entries durable on its own disk, so a checkpoint
// never covers an entry whose write, and the cut it made, may still be lost.
#include <cstdint>
#include <deque>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/byte_slice.h"
#include "log/group_log.h"
#include "replication/received_message.h"

struct raft_core;
struct raft_core_update;
struct raft_core_entry;
struct raft_core_message;

namespace dstream::replication {

enum class entry_kind : std::uint8_t { command = 1, barrier = 2, configuration = 3 };

struct log_entry {
    std::uint64_t term = 0;
    entry_kind kind = entry_kind::command;
    // A command's encoding; libraft's configuration encoding. Shared, never
    // copied: the log, the WAL's queue and the messages to every follower
    // hold the same bytes (a 32 MiB append is one 32 MiB buffer).
    byte_slice bytes;
};

// The last entry a snapshot covers, and the voters as of it.
struct snapshot_meta {
    std::uint64_t index = 0;
    std::uint64_t term = 0;
    std::uint64_t configuration_index = 0;
    std::vector<std::uint64_t> voters;
};

// What makes a checkpoint a Raft snapshot, kept beside its image.
struct snapshot_record {
    snapshot_meta meta;
    // The hard state when it was taken, at least as new as any hard-state
    // record of the WAL segments the snapshot lets go.
    std::uint64_t term = 0;
    std::uint64_t vote = 0;
};

// What a replica found on its disk.
struct durable_state {
    std::uint64_t term = 0;  // 0: nothing ever written: a new replica bootstraps
    std::uint64_t vote = 0;
    // The state machine's state is this snapshot's (a checkpoint, or what
    // replay applied): the entries it covers are not kept.
    std::optional<snapshot_meta> snapshot;
    std::uint64_t first_index = 1;  // the index of entries[0]
    std::vector<log_entry> entries;
};

// The replica's disk. Writes are made in call order, each with a token that
// increases; the owner reports back with written(token) once every write up
// to that token is durable, or write_failed(token) when the write of that
// token did not persist: it and every write not yet reported durable are
// lost (a failed batch may be named by any of its tokens). Never from
// inside a write: the replica is not re-entered by its storage.
class raft_storage {
public:
    virtual ~raft_storage() = default;
    virtual void write_hard_state(std::uint64_t token, std::uint64_t term, std::uint64_t vote) = 0;
    // The entry at `index`: every entry at or after `index` written before is
    // void from here on (a conflicting suffix).
    virtual void write_entry(std::uint64_t token, std::uint64_t index, const log_entry& entry) = 0;
    // A leader's snapshot (a checkpoint image) replaces the whole log. Its
    // record carries the hard state as written: it replaces the checkpoint
    // that kept the hard state of the log segments already let go.
    virtual void write_snapshot(std::uint64_t token, const snapshot_record& record,
                                std::string_view image) = 0;
    // The image of the snapshot covering `index`, the newest one kept, to
    // send to a follower that needs it; nothing when there is none.
    virtual std::optional<std::string> snapshot_image(std::uint64_t index) = 0;
};

class raft_transport {
public:
    virtual ~raft_transport() = default;
    // A message of this group for node `to` (encoded by the shim).
    virtual void send(std::uint64_t to, std::string_view bytes) = 0;
    // The same in pieces, which in order are the message's bytes: a long
    // entry's bytes are a piece shared with the log (raft_options::
    // reference_bytes). By default they are joined in one copy and sent.
    virtual void send_pieces(std::uint64_t to, std::span<const byte_slice> pieces);
};

// The state machine's side.
class raft_events {
public:
    virtual ~raft_events() = default;
    virtual void committed(std::uint64_t index, std::uint64_t term, const log_entry& entry) = 0;
    // The end of a batch of committed() calls: everything through `index` is applied.
    virtual void applied_through(std::uint64_t index) = 0;
    virtual void leadership_changed(const log::leadership& now) = 0;
    // One voter: the entries from `from_index` on were never durable, and
    // the log goes on without them.
    virtual void lost(std::uint64_t from_index) = 0;
    // A leader's snapshot is durable: the state becomes its image's.
    virtual void install(const snapshot_meta& meta, std::string_view image) = 0;
};

struct raft_options {
    std::uint64_t node = 1;                // this replica's node id (> 0)
    std::vector<std::uint64_t> voters{1};  // the group's voters, for a bootstrap
    unsigned election_ms = 1000;
    unsigned heartbeat_ms = 100;
    std::uint64_t seed = 1;  // the election jitter
    bool pre_vote = true;
    // Entries kept before a snapshot for followers that are a little behind;
    // one further behind gets the snapshot.
    unsigned trailing = 1024;
    // How long a leader waits for a follower to install a snapshot before it
    // sends it again (a follower fetching a large image from the object
    // store may take a while; one that lost the message gets it again).
    unsigned install_snapshot_ms = 10000;
    // A leader refuses proposals (raft_group_log) while this many entries are
    // written but not committed (RAFT_UNCOMMITTED_BACKPRESSURE: no majority
    // keeps up), or while its log holds this many bytes in memory
    // (RAFT_LOG_PRESSURE: a follower far behind, no snapshot taken yet).
    std::uint64_t max_uncommitted_entries = 8192;
    std::uint64_t max_log_bytes_kept = std::uint64_t{512} << 20;
    // Entries at least this long go to the followers by reference to the
    // log's bytes (send_pieces), not copied into each message: copying a
    // long entry per follower on the group's thread holds up its heartbeats
    // (a 32 MiB append costs about 100 ms per copy where fresh memory is
    // slow to fault in). Shorter ones are cheaper to copy than to share.
    // 0: every entry is copied.
    std::size_t reference_bytes = 16u << 10;
    // An AppendEntries carries at most this many bytes of entries (or one
    // entry however long): libraft batches up to 32 entries whatever their
    // length, and the peer network refuses a frame past 64 MiB, which a
    // follower behind by a few long appends would otherwise be sent forever.
    // 0: no bound.
    std::size_t message_entry_bytes = 16u << 20;
};

class raft_replica {
public:
    raft_replica(raft_options options, raft_storage& storage, raft_transport& transport,
                 raft_events& events);
    ~raft_replica();
    raft_replica(const raft_replica&) = delete;
    raft_replica& operator=(const raft_replica&) = delete;

    // Once, first. Commits found durable are applied from here on (a sole
    // voter's whole log is committed once durable).
    void start(std::uint64_t now, durable_state state);

    // Leader only: appends a command.
    log::proposal propose(std::uint64_t now, std::string bytes);
    // Leader only: appends a barrier; its index, or nothing when not leader.
    std::optional<std::uint64_t> propose_barrier(std::uint64_t now);
    void receive(std::uint64_t now, std::string_view message);
    // The same, the core keeping the message's memory for its entries.
    void receive(std::uint64_t now, received_message message);
    void written(std::uint64_t now, std::uint64_t token);
    void write_failed(std::uint64_t now, std::uint64_t token);
    // The time of next_timeout() has come.
    void tick(std::uint64_t now);
    // The state machine's state through `index` (of `term`) is in a durable
    // snapshot the storage keeps: entries it covers may go.
    void snapshot_taken(std::uint64_t now, std::uint64_t index, std::uint64_t term);
    // Leader only: hands the leadership to another voter (0: the most
    // up-to-date one); false when there is none or this node does not lead.
    bool transfer(std::uint64_t now, std::uint64_t to);

    std::uint64_t next_timeout() const;
    log::leadership leadership() const { return _leadership; }
    std::uint64_t commit_index() const { return _commit; }
    std::uint64_t applied_index() const { return _applied; }
    std::uint64_t applied_term() const { return _applied_term; }
    std::uint64_t last_index() const { return _first + _log.size() - 1; }
    std::size_t voters() const { return _options.voters.size(); }
    // The metadata a snapshot of the state through `index` (of `term`) has.
    snapshot_meta describe_snapshot(std::uint64_t index, std::uint64_t term) const {
        return snapshot_meta{index, term, _configuration_index, _options.voters};
    }
    // The hard state as written (durable or on its way).
    std::uint64_t term() const { return _term; }
    std::uint64_t vote() const { return _vote; }
    std::uint64_t node() const { return _options.node; }
    // Entries kept in memory, and their bytes (the bounded-memory check).
    std::size_t entries_kept() const { return _log.size(); }
    std::uint64_t bytes_kept() const { return _bytes_kept; }

private:
    struct held_message {
        std::uint64_t gate = 0;  // sent once this token is durable
        std::uint64_t to = 0;
        std::vector<byte_slice> pieces;
    };
    struct entry_write {
        std::uint64_t token = 0;
        std::uint64_t index = 0;
    };

    void create_core();
    // Takes in an update: writes, messages, commit, state; then applies.
    void absorb(int rv, const raft_core_update* update);
    // What a received message's call returned.
    void received(int rv, const raft_core_update* update);
    void apply_committed(std::uint64_t now);
    void release_messages();
    // The core's message with the entries it left out put back by reference
    // to the log; nothing when an entry is gone (the message is dropped, as
    // a lossy network would, and the core sends again).
    std::optional<std::vector<byte_slice>> pieces_of(const raft_core_message& m) const;
    void send(std::uint64_t to, std::span<const byte_slice> pieces);
    void drop_applied_entries();
    void take_pending_snapshot(std::uint64_t now);
    void report_leadership();
    // Restarts the core from what is durable, after a failed write.
    void restart_from_durable(std::uint64_t now);
    const log_entry* entry_at(std::uint64_t index) const;

    static int entry_callback(void* ctx, std::uint64_t index, raft_core_entry* out);
    static int snapshot_callback(void* ctx, std::uint64_t index, const void** data,
                                 std::size_t* len);

    raft_options _options;
    raft_storage& _storage;
    raft_transport& _transport;
    raft_events& _events;
    raft_core* _core = nullptr;
    std::uint64_t _now = 0;

    // The log this node keeps: entries [_first, _first + _log.size()).
    std::deque<log_entry> _log;
    std::uint64_t _first = 1;
    std::uint64_t _bytes_kept = 0;
    std::optional<snapshot_meta> _snapshot;  // the newest one the core took, durable
    // A durable snapshot the core cannot take yet (take_pending_snapshot).
    std::optional<snapshot_meta> _pending_snapshot;
    std::string _snapshot_buffer;            // what the snapshot callback hands out
    // A leader's snapshot being written: applied once durable.
    std::optional<std::pair<snapshot_meta, std::string>> _installing;
    std::uint64_t _installing_token = 0;
    // The log a snapshot being written replaces, until it is durable.
    struct replaced_log {
        std::deque<log_entry> log;
        std::uint64_t first = 1;
        std::uint64_t bytes_kept = 0;
        std::uint64_t durable_index = 0;
        std::uint64_t commit = 0;
    };
    std::optional<replaced_log> _replaced;

    std::uint64_t _commit = 0;
    std::uint64_t _applied = 0;
    std::uint64_t _applied_term = 0;
    bool _applying = false;
    log::leadership _leadership;

    // Writes: tokens, what is durable.
    std::uint64_t _next_token = 1;
    std::uint64_t _restart_token = 0;  // the first token after the last restart
    std::uint64_t _durable_token = 0;
    std::uint64_t _hard_state_token = 0;  // the newest hard state written
    std::uint64_t _term = 0, _vote = 0;   // as written
    std::uint64_t _durable_term = 0, _durable_vote = 0;
    struct hard_state_write {
        std::uint64_t token, term, vote;
    };
    std::deque<hard_state_write> _hard_states_in_flight;
    std::deque<entry_write> _entries_in_flight;
    // A command being proposed: its bytes go into the log without a copy.
    std::string _proposed;
    std::uint64_t _proposed_index = 0;
    std::uint64_t _configuration_index = 1;  // of the newest configuration entry
    std::uint64_t _durable_index = 0;  // the last entry known durable
    std::deque<held_message> _held;
    bool _failed = false;  // a write failed: the core restarts once writes settle
};

}  // namespace dstream::replication
