/* A narrow C interface around one libraft 0.22 `struct raft`, driven through
 * raft_step() (no raft_io, no raft_fsm). raft_core.c is the only file of the
 * project that includes <raft.h>: that header does not compile as C++ (see
 * docs in raft_core.c), so C++ code talks to libraft through this header only.
 *
 * The model:
 * - The application owns the log, the term and the vote, and the snapshots,
 *   on its own disk. It hands the core what it has at start
 *   (raft_core_bootstrap or raft_core_start) and then one event at a time.
 * - Every event returns a raft_core_update: what changed and what to do, in
 *   this order: (1) make the term and the vote durable (TERM / VOTE), (2) put
 *   the new entries in the log, first discarding every entry at index >=
 *   entries_index (ENTRIES) and report them durable later with
 *   raft_core_persisted_entries, (3) write the snapshot received from the
 *   leader (SNAPSHOT) and report it with raft_core_persisted_snapshot, (4)
 *   only then send the messages (MESSAGES), (5) apply the entries up to
 *   commit_index (COMMIT), (6) arm the timer for `timeout` (TIMEOUT).
 * - Messages are byte strings encoded by the core (a versioned format of its
 *   own): a transport moves them to the node `to` and hands them to that
 *   node's raft_core_receive.
 * - Everything an update points at (entries, messages, servers) belongs to
 *   the core and stays valid until the next call on the same core, except the
 *   snapshot data of a SNAPSHOT update, which stays valid until
 *   raft_core_persisted_snapshot (or raft_core_destroy), and the entries'
 *   bytes, which the caller may take (raft_core_take_entries). Copy what you
 *   keep. The core copies no entry's bytes of its own accord: a submit's
 *   stay the caller's, a received message's are decoded once.
 * - Time is milliseconds on a monotonic clock of the caller's choosing;
 *   every event carries `now`.
 * - No thread safety: one core is used by one thread (or strand) at a time.
 */
#ifndef DSTREAM_REPLICATION_RAFT_RAFT_CORE_H
#define DSTREAM_REPLICATION_RAFT_RAFT_CORE_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct raft_core raft_core;

/* Results of every call returning int. */
enum raft_core_error {
    RAFT_CORE_OK = 0,
    RAFT_CORE_NOMEM = 1,     /* allocation failed: the core is unusable */
    RAFT_CORE_NOTLEADER = 2, /* submit/transfer on a node that is not leader */
    RAFT_CORE_MALFORMED = 3, /* bytes that are not a message of ours */
    RAFT_CORE_INVALID = 4,   /* a call out of order or with impossible values */
    RAFT_CORE_BADID = 5,     /* transfer to a server that is not a voter */
    RAFT_CORE_NOTFOUND = 6,  /* transfer with no other voter to pick */
    RAFT_CORE_SHUTDOWN = 7,  /* the log conflicts with committed entries */
    RAFT_CORE_FAILED = 8     /* any other error of libraft (raft_core_errmsg) */
};

enum raft_core_state {
    RAFT_CORE_UNAVAILABLE = 0,
    RAFT_CORE_FOLLOWER = 1,
    RAFT_CORE_CANDIDATE = 2,
    RAFT_CORE_LEADER = 3
};

enum raft_core_entry_type {
    RAFT_CORE_COMMAND = 1, /* application bytes */
    RAFT_CORE_BARRIER = 2, /* no payload for the application: skip it */
    RAFT_CORE_CHANGE = 3   /* a configuration: hand it to raft_core_apply_change */
};

enum raft_core_role { RAFT_CORE_STANDBY = 0, RAFT_CORE_VOTER = 1, RAFT_CORE_SPARE = 2 };

/* The types of messages (as libraft 0.22 numbers them). */
enum raft_core_message_type {
    RAFT_CORE_APPEND_ENTRIES = 1,
    RAFT_CORE_APPEND_ENTRIES_RESULT = 2,
    RAFT_CORE_REQUEST_VOTE = 3,
    RAFT_CORE_REQUEST_VOTE_RESULT = 4,
    RAFT_CORE_INSTALL_SNAPSHOT = 5,
    RAFT_CORE_TIMEOUT_NOW = 6
};

struct raft_core_entry {
    uint64_t term;
    int type; /* enum raft_core_entry_type */
    const void* data;
    size_t len;
};

struct raft_core_server {
    uint64_t id;
    int role; /* enum raft_core_role */
};

struct raft_core_snapshot {
    uint64_t index; /* last entry covered */
    uint64_t term;  /* its term */
    uint64_t configuration_index;
    const struct raft_core_server* servers; /* the configuration at configuration_index */
    size_t n_servers;
    const void* data; /* in a SNAPSHOT update: the bytes to write; ignored in raft_core_start */
    size_t len;
};

/* An entry's bytes left out of a message (raft_core_set_reference_bytes):
 * they belong at byte `at` of the message's data. */
struct raft_core_hole {
    size_t at;
    uint64_t index; /* the entry's */
    size_t len;
};

struct raft_core_message {
    uint64_t to;
    const void* data;
    size_t len;
    /* In order of `at`; the message is `data` with each entry's bytes put in
     * at its hole. */
    const struct raft_core_hole* holes;
    size_t n_holes;
};

/* raft_core_update.flags */
#define RAFT_CORE_UPDATE_TERM (1u << 0)     /* persist `term` (the vote is reset with it) */
#define RAFT_CORE_UPDATE_VOTE (1u << 1)     /* persist `voted_for` */
#define RAFT_CORE_UPDATE_ENTRIES (1u << 2)  /* truncate at entries_index, append entries */
#define RAFT_CORE_UPDATE_SNAPSHOT (1u << 3) /* write `snapshot`, replacing the whole log */
#define RAFT_CORE_UPDATE_MESSAGES (1u << 4) /* send `messages` (after the above are durable) */
#define RAFT_CORE_UPDATE_STATE (1u << 5)    /* state or known leader changed */
#define RAFT_CORE_UPDATE_COMMIT (1u << 6)   /* commit_index moved */
#define RAFT_CORE_UPDATE_TIMEOUT (1u << 7)  /* `timeout` changed */

struct raft_core_update {
    unsigned flags;
    uint64_t term;      /* current term (always filled) */
    uint64_t voted_for; /* current vote, 0 for none (always filled) */
    uint64_t entries_index;
    const struct raft_core_entry* entries;
    size_t n_entries;
    struct raft_core_snapshot snapshot;
    const struct raft_core_message* messages;
    size_t n_messages;
    int state;             /* enum raft_core_state (always filled) */
    uint64_t leader_id;    /* 0 when unknown (always filled) */
    uint64_t commit_index; /* always filled */
    uint64_t last_index;   /* index of the last entry of the log, durable or not */
    uint64_t timeout;      /* when to call raft_core_timeout (always filled) */
};

/* What the core needs of the application's storage to fill outgoing
 * messages: libraft keeps only the terms of the log in memory. */
struct raft_core_storage {
    void* ctx;
    /* The entry at `index` of the log as updates have built it (it need not be
     * durable yet). The pointers must stay valid until the callback returns
     * or is called again. Return 0, or non-zero when the entry is gone (the
     * message that needed it is then dropped and libraft retries later). */
    int (*entry)(void* ctx, uint64_t index, struct raft_core_entry* out);
    /* The data of the snapshot at `index`: the last one taken
     * (raft_core_take_snapshot), installed or given at start. Same rules. */
    int (*snapshot_data)(void* ctx, uint64_t index, const void** data, size_t* len);
};

/* `address` may be NULL: the node is then known by its id written in decimal
 * (configurations hold every server's id in decimal as its address). The
 * storage is copied. Returns NULL on allocation failure. */
raft_core* raft_core_create(uint64_t id, const char* address,
                            const struct raft_core_storage* storage);
void raft_core_destroy(raft_core* core);

/* Before bootstrap/start. Defaults of libraft: election 1000 ms (randomized
 * in [1x, 2x]), heartbeat 100 ms; heartbeat must be below election. */
int raft_core_set_timeouts(raft_core* core, unsigned election_ms, unsigned heartbeat_ms);
void raft_core_set_seed(raft_core* core, unsigned seed); /* the election jitter */
void raft_core_set_pre_vote(raft_core* core, int enabled);
/* Entries of at least `min_len` bytes (0: none, the default) are left out of
 * the AppendEntries messages, whose holes say where each belongs: the caller
 * puts in its own bytes of the entry, so that one long entry is not copied
 * once per follower. */
void raft_core_set_reference_bytes(raft_core* core, size_t min_len);
/* An AppendEntries carries entries of at most `bytes` in all (0: any number,
 * the default), or one entry however long; a longer batch of libraft's goes
 * as several consecutive messages. */
void raft_core_set_message_entry_bytes(raft_core* core, size_t bytes);
/* How long a leader waits for a follower's answer to an InstallSnapshot
 * before it probes and sends again (libraft's default: 30 s). */
void raft_core_set_install_snapshot_timeout(raft_core* core, unsigned ms);

/* A brand new node with the given voters: equivalent to persisting term 1 and
 * the configuration as entry 1, then starting from that. The update asks to
 * persist both (TERM and ENTRIES); entry 1 counts as durable already. */
int raft_core_bootstrap(raft_core* core, uint64_t now, const uint64_t* voter_ids, size_t n_voters,
                        const struct raft_core_update** update);

struct raft_core_persisted_state {
    uint64_t term;      /* 0: nothing was ever persisted (then no snapshot, no entries) */
    uint64_t voted_for; /* 0: no vote */
    const struct raft_core_snapshot* snapshot; /* NULL: none */
    uint64_t start_index; /* index of entries[0]: 1 without snapshot, else <= snapshot->index + 1 */
    const struct raft_core_entry* entries;
    size_t n_entries;
};

/* A node with durable state (or none). Without a snapshot, entry 1 must be
 * the bootstrap configuration (RAFT_CORE_CHANGE). */
int raft_core_start(raft_core* core, uint64_t now, const struct raft_core_persisted_state* state,
                    const struct raft_core_update** update);

/* The events. Each returns the update through *update (also on errors, with
 * whatever changed before the error). */
int raft_core_receive(raft_core* core, uint64_t now, const void* bytes, size_t len,
                      const struct raft_core_update** update);
/* Memory for a message to receive with raft_core_receive_owned. */
void* raft_core_alloc_message(size_t len);
/* As raft_core_receive, but the core takes `bytes` (raft_core_alloc_message):
 * the entries of an AppendEntries are not copied out of it but stay there,
 * and it goes with them (raft_core_take_entries); the core frees it when
 * nothing needs it. */
int raft_core_receive_owned(raft_core* core, uint64_t now, void* bytes, size_t len,
                            const struct raft_core_update** update);
/* The entries handed out up to `index` are durable: `index` is the last
 * index of an ENTRIES update already written (reports in write order; a
 * report covers every earlier update too). Stale reports are ignored. */
int raft_core_persisted_entries(raft_core* core, uint64_t now, uint64_t index,
                                const struct raft_core_update** update);
/* The snapshot of the last SNAPSHOT update is durable (and the application
 * has restored its state from it). */
int raft_core_persisted_snapshot(raft_core* core, uint64_t now,
                                 const struct raft_core_update** update);
int raft_core_timeout(raft_core* core, uint64_t now, const struct raft_core_update** update);
/* On the leader: a new entry; *index receives its index. The update's entry
 * points into `data`, which must stay valid and unchanged until the caller
 * is done with the update. */
int raft_core_submit(raft_core* core, uint64_t now, const void* data, size_t len, uint64_t* index,
                     const struct raft_core_update** update);
/* The memory of the current ENTRIES update's bytes, for the caller to keep
 * beyond the next call and free with raft_core_free_entries; NULL when the
 * core has none to give (a submit's bytes are the caller's, and entries the
 * core copied stay the core's until the next call). */
void* raft_core_take_entries(raft_core* core);
void raft_core_free_entries(void* entries);
int raft_core_submit_barrier(raft_core* core, uint64_t now, uint64_t* index,
                             const struct raft_core_update** update);
/* The application took a snapshot of its state through `index` (<= the
 * commit index; `term` is that entry's term) and keeps `trailing` entries
 * before it. The core adds the configuration. */
int raft_core_take_snapshot(raft_core* core, uint64_t now, uint64_t index, uint64_t term,
                            unsigned trailing, const struct raft_core_update** update);
/* On the leader: hand leadership to `to` (0: the most up-to-date voter). */
int raft_core_transfer(raft_core* core, uint64_t now, uint64_t to,
                       const struct raft_core_update** update);
/* The application applied the committed RAFT_CORE_CHANGE entry at `index`. */
int raft_core_apply_change(raft_core* core, uint64_t now, uint64_t index, const void* data,
                           size_t len, const struct raft_core_update** update);

/* The state now (the same values as in the last update). */
int raft_core_state(const raft_core* core);
uint64_t raft_core_id(const raft_core* core);
uint64_t raft_core_leader(const raft_core* core);
uint64_t raft_core_term(const raft_core* core);
uint64_t raft_core_commit_index(const raft_core* core);
uint64_t raft_core_last_index(const raft_core* core);
uint64_t raft_core_next_timeout(const raft_core* core);
const char* raft_core_errmsg(const raft_core* core);
const char* raft_core_strerror(int error);

/* The message format, for transports and tests. */
/* Reads the type, sender and destination of an encoded message. */
int raft_core_message_peek(const void* bytes, size_t len, int* type, uint64_t* from, uint64_t* to);
/* Decodes and encodes again (into malloc'd *out, free() it): the result is
 * the same bytes for every message this core encodes. */
int raft_core_message_reencode(const void* bytes, size_t len, void** out, size_t* out_len);
/* For an InstallSnapshot: the index and term of the snapshot it carries, and
 * the length of its data, which is the message's last data_len bytes.
 * RAFT_CORE_NOTFOUND for a message of another type. */
int raft_core_snapshot_message(const void* bytes, size_t len, uint64_t* index, uint64_t* term,
                               size_t* data_len);
/* The InstallSnapshot `bytes` carrying `data` instead (malloc'd *out, free() it). */
int raft_core_snapshot_message_with(const void* bytes, size_t len, const void* data,
                                    size_t data_len, void** out, size_t* out_len);
/* One line describing the decoded message (for logs and tests); returns the
 * length it needed, like snprintf, or -1 when the bytes do not decode. */
int raft_core_message_describe(const void* bytes, size_t len, char* buf, size_t size);

#ifdef __cplusplus
}
#endif

#endif /* DSTREAM_REPLICATION_RAFT_RAFT_CORE_H */
