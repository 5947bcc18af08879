/* The one translation unit of dstream that includes <raft.h> (libraft 0.22).
 *
 * Why C: libraft's raft.h cannot be compiled as C++ (g++ 12 rejects its ABI
 * checks, RAFT__ASSERT_COMPATIBILITY, with "types may not be defined in
 * 'sizeof' expressions", it has no extern "C" block, and its anonymous
 * structs are not ISO C++). raft_core.h is the C interface C++ sees.
 *
 * What this file does around raft_step():
 * - fills the RAFT_START event from the application's persisted state;
 * - copies the entries of every RAFT_UPDATE_ENTRIES into memory of its own and
 *   frees libraft's batch at once (in 0.22.1 the caller of raft_step() owns
 *   update.entries.batch[0].batch after the step, whoever allocated it);
 * - tracks the batches handed out, so that a "persisted through index" report
 *   that a later truncation made stale is cut down or dropped instead of
 *   tripping libraft's assertions;
 * - fills the entries of outgoing AppendEntries (libraft keeps only terms)
 *   and the configuration and data of outgoing InstallSnapshot from the
 *   application's storage, and encodes every message to bytes;
 * - decodes incoming bytes into a raft_message whose memory follows 0.22.1's
 *   rules (one raft_malloc'd batch for all entries of a message, configuration
 *   and snapshot data raft_malloc'd), and frees what libraft does not.
 *
 * The wire format (all integers unsigned LEB128 varints unless "u8"):
 *   u8 format (1) | u8 type | from | to | u8 version of libraft's struct |
 *   body by type:
 *   REQUEST_VOTE          term candidate_id last_log_index last_log_term
 *                         u8 flags (1 disrupt_leader, 2 pre_vote)
 *   REQUEST_VOTE_RESULT   term u8 flags (1 vote_granted, 2 pre_vote) features capacity
 *   APPEND_ENTRIES        term prev_log_index prev_log_term leader_commit n
 *                         n x (term u8 type len bytes)
 *   APPEND_ENTRIES_RESULT term rejected last_log_index features capacity
 *   INSTALL_SNAPSHOT      term last_index last_term conf_index n_servers
 *                         n_servers x (id u8 role address_len address) data_len data
 *   TIMEOUT_NOW           term last_log_index last_log_term
 * A message must be consumed exactly; unknown flags or types are malformed.
 */
#include "replication/raft/raft_core.h"

#include <raft.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#if RAFT_VERSION_NUMBER < 2200 || RAFT_VERSION_NUMBER >= 2300
#error "raft_core.c follows libraft 0.22's memory ownership rules, which change between releases"
#endif

/* Our enums carry libraft's numbers. */
#define SAME(a, b) ((int)(a) == (int)(b))
_Static_assert(SAME(RAFT_CORE_APPEND_ENTRIES, RAFT_APPEND_ENTRIES) &&
                   SAME(RAFT_CORE_APPEND_ENTRIES_RESULT, RAFT_APPEND_ENTRIES_RESULT) &&
                   SAME(RAFT_CORE_REQUEST_VOTE, RAFT_REQUEST_VOTE) &&
                   SAME(RAFT_CORE_REQUEST_VOTE_RESULT, RAFT_REQUEST_VOTE_RESULT) &&
                   SAME(RAFT_CORE_INSTALL_SNAPSHOT, RAFT_INSTALL_SNAPSHOT) &&
                   SAME(RAFT_CORE_TIMEOUT_NOW, RAFT_TIMEOUT_NOW),
               "message types");
_Static_assert(SAME(RAFT_CORE_COMMAND, RAFT_COMMAND) && SAME(RAFT_CORE_BARRIER, RAFT_BARRIER) &&
                   SAME(RAFT_CORE_CHANGE, RAFT_CHANGE),
               "entry types");
_Static_assert(SAME(RAFT_CORE_STANDBY, RAFT_STANDBY) && SAME(RAFT_CORE_VOTER, RAFT_VOTER) &&
                   SAME(RAFT_CORE_SPARE, RAFT_SPARE),
               "roles");
_Static_assert(SAME(RAFT_CORE_FOLLOWER, RAFT_FOLLOWER) &&
                   SAME(RAFT_CORE_CANDIDATE, RAFT_CANDIDATE) &&
                   SAME(RAFT_CORE_LEADER, RAFT_LEADER) &&
                   SAME(RAFT_CORE_UNAVAILABLE, RAFT_UNAVAILABLE),
               "states");

#define FORMAT_VERSION 1
#define MAX_ADDRESS_LEN 255
#define ADDRESS_BUF 24 /* a 64-bit id in decimal and its NUL */

/* ------------------------------------------------------------------ bytes */

struct wbuf {
    uint8_t* p;
    size_t len;
    size_t cap;
    bool failed;
};

static void w_reserve(struct wbuf* w, size_t more) {
    size_t cap;
    uint8_t* p;
    if (w->failed || w->cap - w->len >= more) {
        return;
    }
    cap = w->cap == 0 ? 64 : w->cap;
    while (cap - w->len < more) {
        cap *= 2;
    }
    p = realloc(w->p, cap);
    if (p == NULL) {
        w->failed = true;
        return;
    }
    w->p = p;
    w->cap = cap;
}

static void w_u8(struct wbuf* w, unsigned v) {
    w_reserve(w, 1);
    if (!w->failed) {
        w->p[w->len++] = (uint8_t)v;
    }
}

static void w_varint(struct wbuf* w, uint64_t v) {
    w_reserve(w, 10);
    if (w->failed) {
        return;
    }
    while (v >= 0x80) {
        w->p[w->len++] = (uint8_t)(v | 0x80);
        v >>= 7;
    }
    w->p[w->len++] = (uint8_t)v;
}

static void w_bytes(struct wbuf* w, const void* data, size_t n) {
    if (n == 0) {
        return;
    }
    w_reserve(w, n);
    if (!w->failed) {
        memcpy(w->p + w->len, data, n);
        w->len += n;
    }
}

struct rbuf {
    const uint8_t* p;
    size_t len;
    size_t pos;
    bool failed;
};

static unsigned r_u8(struct rbuf* r) {
    if (r->failed || r->pos >= r->len) {
        r->failed = true;
        return 0;
    }
    return r->p[r->pos++];
}

static uint64_t r_varint(struct rbuf* r) {
    uint64_t v = 0;
    unsigned shift = 0;
    for (;;) {
        unsigned b = r_u8(r);
        if (r->failed) {
            return 0;
        }
        if (shift == 63 && b > 1) { /* more than 64 bits */
            r->failed = true;
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        if ((b & 0x80) == 0) {
            return v;
        }
        shift += 7;
        if (shift > 63) {
            r->failed = true;
            return 0;
        }
    }
}

static const uint8_t* r_bytes(struct rbuf* r, uint64_t n) {
    const uint8_t* p;
    if (r->failed || n > r->len - r->pos) {
        r->failed = true;
        return NULL;
    }
    p = r->p + r->pos;
    r->pos += (size_t)n;
    return p;
}

static size_t r_left(const struct rbuf* r) { return r->len - r->pos; }

/* ------------------------------------------------------ configurations */

static void id_address(uint64_t id, char buf[ADDRESS_BUF]) {
    snprintf(buf, ADDRESS_BUF, "%llu", (unsigned long long)id);
}

static int conf_copy(const struct raft_configuration* src, struct raft_configuration* dst) {
    unsigned i;
    raft_configuration_init(dst);
    for (i = 0; i < src->n; i++) {
        int rv = raft_configuration_add(dst, src->servers[i].id, src->servers[i].address,
                                        src->servers[i].role);
        if (rv != 0) {
            raft_configuration_close(dst);
            raft_configuration_init(dst);
            return rv;
        }
    }
    return 0;
}

static int conf_from_servers(const struct raft_core_server* servers, size_t n,
                             struct raft_configuration* dst) {
    size_t i;
    raft_configuration_init(dst);
    for (i = 0; i < n; i++) {
        char address[ADDRESS_BUF];
        int rv;
        if (servers[i].id == 0) {
            raft_configuration_close(dst);
            raft_configuration_init(dst);
            return RAFT_BADID;
        }
        id_address(servers[i].id, address);
        rv = raft_configuration_add(dst, servers[i].id, address, servers[i].role);
        if (rv != 0) {
            raft_configuration_close(dst);
            raft_configuration_init(dst);
            return rv;
        }
    }
    return 0;
}

/* ------------------------------------------------------------ the codec */

/* The entries an encoder leaves out of an AppendEntries: those of at least
 * `min_len` bytes (raft_core_set_reference_bytes), one hole each. */
struct holes {
    struct raft_core_hole* p;
    size_t n;
    size_t cap;
    size_t min_len;
};

static int holes_push(struct holes* h, size_t at, uint64_t index, size_t len) {
    if (h->n == h->cap) {
        size_t cap = h->cap == 0 ? 4 : h->cap * 2;
        struct raft_core_hole* p = realloc(h->p, cap * sizeof *p);
        if (p == NULL) {
            return RAFT_CORE_NOMEM;
        }
        h->p = p;
        h->cap = cap;
    }
    h->p[h->n].at = at;
    h->p[h->n].index = index;
    h->p[h->n].len = len;
    h->n++;
    return RAFT_CORE_OK;
}

/* Where the encoder finds the i'th entry (at `index`) of an AppendEntries. */
typedef int (*entry_getter)(void* ctx, raft_index index, unsigned i, struct raft_core_entry* out);

static bool valid_entry_type(unsigned type) {
    return type == RAFT_COMMAND || type == RAFT_BARRIER || type == RAFT_CHANGE;
}

/* Encodes `m`; the entries of an AppendEntries come from `get`, the
 * configuration and data of an InstallSnapshot from `conf` and `data`. With
 * `holes`, the bytes of entries of at least holes->min_len are left out and
 * their places recorded instead. */
static int encode_message(struct wbuf* w, const struct raft_message* m, uint64_t from, uint64_t to,
                          entry_getter get, void* get_ctx, const struct raft_configuration* conf,
                          const void* data, size_t data_len, struct holes* holes) {
    unsigned i;
    w_u8(w, FORMAT_VERSION);
    w_u8(w, (unsigned)m->type);
    w_varint(w, from);
    w_varint(w, to);
    switch (m->type) {
        case RAFT_REQUEST_VOTE: {
            const struct raft_request_vote* a = &m->request_vote;
            w_u8(w, a->version);
            w_varint(w, a->term);
            w_varint(w, a->candidate_id);
            w_varint(w, a->last_log_index);
            w_varint(w, a->last_log_term);
            w_u8(w, (a->disrupt_leader ? 1u : 0u) | (a->pre_vote ? 2u : 0u));
            break;
        }
        case RAFT_REQUEST_VOTE_RESULT: {
            const struct raft_request_vote_result* a = &m->request_vote_result;
            w_u8(w, a->version);
            w_varint(w, a->term);
            w_u8(w, (a->vote_granted ? 1u : 0u) | (a->pre_vote ? 2u : 0u));
            w_varint(w, a->features);
            w_varint(w, a->capacity);
            break;
        }
        case RAFT_APPEND_ENTRIES: {
            const struct raft_append_entries* a = &m->append_entries;
            w_u8(w, a->version);
            w_varint(w, a->term);
            w_varint(w, a->prev_log_index);
            w_varint(w, a->prev_log_term);
            w_varint(w, a->leader_commit);
            w_varint(w, a->n_entries);
            for (i = 0; i < a->n_entries; i++) {
                struct raft_core_entry e;
                if (get(get_ctx, a->prev_log_index + 1 + i, i, &e) != 0) {
                    return RAFT_CORE_NOTFOUND;
                }
                if (!valid_entry_type((unsigned)e.type) || e.term == 0) {
                    return RAFT_CORE_INVALID;
                }
                w_varint(w, e.term);
                w_u8(w, (unsigned)e.type);
                w_varint(w, e.len);
                if (holes != NULL && e.len > 0 && e.len >= holes->min_len) {
                    if (w->failed ||
                        holes_push(holes, w->len, a->prev_log_index + 1 + i, e.len) != 0) {
                        return RAFT_CORE_NOMEM;
                    }
                } else {
                    w_bytes(w, e.data, e.len);
                }
            }
            break;
        }
        case RAFT_APPEND_ENTRIES_RESULT: {
            const struct raft_append_entries_result* a = &m->append_entries_result;
            w_u8(w, a->version);
            w_varint(w, a->term);
            w_varint(w, a->rejected);
            w_varint(w, a->last_log_index);
            w_varint(w, a->features);
            w_varint(w, a->capacity);
            break;
        }
        case RAFT_INSTALL_SNAPSHOT: {
            const struct raft_install_snapshot* a = &m->install_snapshot;
            w_u8(w, a->version);
            w_varint(w, a->term);
            w_varint(w, a->last_index);
            w_varint(w, a->last_term);
            w_varint(w, a->conf_index);
            w_varint(w, conf->n);
            for (i = 0; i < conf->n; i++) {
                size_t alen = strlen(conf->servers[i].address);
                if (alen > MAX_ADDRESS_LEN) {
                    return RAFT_CORE_INVALID;
                }
                w_varint(w, conf->servers[i].id);
                w_u8(w, (unsigned)conf->servers[i].role);
                w_varint(w, alen);
                w_bytes(w, conf->servers[i].address, alen);
            }
            w_varint(w, data_len);
            w_bytes(w, data, data_len);
            break;
        }
        case RAFT_TIMEOUT_NOW: {
            const struct raft_timeout_now* a = &m->timeout_now;
            w_u8(w, a->version);
            w_varint(w, a->term);
            w_varint(w, a->last_log_index);
            w_varint(w, a->last_log_term);
            break;
        }
        default:
            return RAFT_CORE_INVALID;
    }
    return w->failed ? RAFT_CORE_NOMEM : RAFT_CORE_OK;
}

/* Frees what decode_message allocated. */
static void message_release(struct raft_message* m) {
    if (m->type == RAFT_APPEND_ENTRIES && m->append_entries.n_entries > 0) {
        raft_free(m->append_entries.entries[0].batch);
        raft_free(m->append_entries.entries);
        m->append_entries.entries = NULL;
        m->append_entries.n_entries = 0;
    } else if (m->type == RAFT_INSTALL_SNAPSHOT) {
        raft_configuration_close(&m->install_snapshot.conf);
        raft_configuration_init(&m->install_snapshot.conf);
        raft_free(m->install_snapshot.data.base);
        m->install_snapshot.data.base = NULL;
        m->install_snapshot.data.len = 0;
    }
}

static int decode_header(struct rbuf* r, int* type, uint64_t* from, uint64_t* to) {
    unsigned format = r_u8(r);
    unsigned t = r_u8(r);
    *from = r_varint(r);
    *to = r_varint(r);
    if (r->failed || format != FORMAT_VERSION || t < RAFT_APPEND_ENTRIES || t > RAFT_TIMEOUT_NOW ||
        *from == 0 || *to == 0) {
        return RAFT_CORE_MALFORMED;
    }
    *type = (int)t;
    return RAFT_CORE_OK;
}

static bool fits_u16(uint64_t v) { return v <= 0xffff; }

/* With `in_place` (the message's own memory, raft_malloc'd), the entries
 * point into the message and it is their batch; otherwise they are copied
 * into a batch of their own. */
static int decode_append_entries(struct rbuf* r, struct raft_append_entries* a, void* in_place) {
    struct rbuf scan;
    uint64_t n;
    uint64_t i;
    uint64_t total = 0;
    raft_term prev_term;
    uint8_t* batch;
    uint8_t* cursor;

    a->term = r_varint(r);
    a->prev_log_index = r_varint(r);
    a->prev_log_term = r_varint(r);
    a->leader_commit = r_varint(r);
    n = r_varint(r);
    a->entries = NULL;
    a->n_entries = 0;
    /* libraft asserts that prev_log_term is 0 exactly when prev_log_index is. */
    if (r->failed || a->term == 0 || (a->prev_log_index == 0) != (a->prev_log_term == 0) ||
        a->prev_log_term > a->term || n > r_left(r) / 3 || n > 0xffffffffu) {
        return RAFT_CORE_MALFORMED;
    }
    if (n == 0) {
        return RAFT_CORE_OK;
    }
    /* First pass: check the entries (terms nonzero, in order, not above the
     * leader's) and size the batch. */
    scan = *r;
    prev_term = a->prev_log_term;
    for (i = 0; i < n; i++) {
        uint64_t term = r_varint(&scan);
        unsigned type = r_u8(&scan);
        uint64_t len = r_varint(&scan);
        r_bytes(&scan, len);
        if (scan.failed || term == 0 || term < prev_term || term > a->term ||
            !valid_entry_type(type)) {
            return RAFT_CORE_MALFORMED;
        }
        prev_term = term;
        total += len;
    }
    a->entries = raft_malloc((size_t)n * sizeof *a->entries);
    batch = in_place != NULL ? in_place : raft_malloc(total > 0 ? (size_t)total : 1);
    if (a->entries == NULL || batch == NULL) {
        raft_free(a->entries);
        if (in_place == NULL) {
            raft_free(batch);
        }
        a->entries = NULL;
        return RAFT_CORE_NOMEM;
    }
    cursor = batch;
    for (i = 0; i < n; i++) {
        struct raft_entry* e = &a->entries[i];
        uint64_t len;
        const uint8_t* data;
        e->term = r_varint(r);
        e->type = (enum raft_entry_type)r_u8(r);
        len = r_varint(r);
        data = r_bytes(r, len);
        if (in_place != NULL) {
            e->buf.base = (void*)data;
            e->buf.len = (size_t)len;
            e->batch = batch;
            continue;
        }
        memcpy(cursor, data, (size_t)len);
        e->buf.base = cursor;
        e->buf.len = (size_t)len;
        e->batch = batch; /* every entry of a message in one batch */
        cursor += len;
    }
    a->n_entries = (unsigned)n;
    return RAFT_CORE_OK;
}

static int decode_install_snapshot(struct rbuf* r, struct raft_install_snapshot* a) {
    uint64_t n;
    uint64_t i;
    uint64_t len;
    const uint8_t* data;

    raft_configuration_init(&a->conf);
    a->data.base = NULL;
    a->data.len = 0;
    a->term = r_varint(r);
    a->last_index = r_varint(r);
    a->last_term = r_varint(r);
    a->conf_index = r_varint(r);
    n = r_varint(r);
    if (r->failed || a->term == 0 || a->last_index == 0 || a->last_term == 0 ||
        a->last_term > a->term || a->conf_index > a->last_index || n == 0 || n > r_left(r) / 3) {
        return RAFT_CORE_MALFORMED;
    }
    for (i = 0; i < n; i++) {
        char address[MAX_ADDRESS_LEN + 1];
        uint64_t id = r_varint(r);
        unsigned role = r_u8(r);
        uint64_t alen = r_varint(r);
        const uint8_t* abytes;
        int rv;
        if (r->failed || alen > MAX_ADDRESS_LEN) {
            goto malformed;
        }
        abytes = r_bytes(r, alen);
        if (r->failed || id == 0 ||
            (role != RAFT_STANDBY && role != RAFT_VOTER && role != RAFT_SPARE) ||
            memchr(abytes, '\0', (size_t)alen) != NULL) {
            goto malformed;
        }
        memcpy(address, abytes, (size_t)alen);
        address[alen] = '\0';
        rv = raft_configuration_add(&a->conf, id, address, (int)role);
        if (rv == RAFT_NOMEM) {
            raft_configuration_close(&a->conf);
            raft_configuration_init(&a->conf);
            return RAFT_CORE_NOMEM;
        }
        if (rv != 0) {
            goto malformed; /* a duplicate id or address */
        }
    }
    len = r_varint(r);
    data = r_bytes(r, len);
    if (r->failed) {
        goto malformed;
    }
    a->data.base = raft_malloc(len > 0 ? (size_t)len : 1);
    if (a->data.base == NULL) {
        raft_configuration_close(&a->conf);
        raft_configuration_init(&a->conf);
        return RAFT_CORE_NOMEM;
    }
    if (len > 0) {
        memcpy(a->data.base, data, (size_t)len);
    }
    a->data.len = (size_t)len;
    return RAFT_CORE_OK;

malformed:
    raft_configuration_close(&a->conf);
    raft_configuration_init(&a->conf);
    return RAFT_CORE_MALFORMED;
}

/* Decodes `bytes` into `m`, whose memory then follows libraft 0.22.1's rules
 * for a received message; `m->server_address` is left NULL. `in_place`: see
 * decode_append_entries; on a failure the message holds nothing of it. */
static int decode_message(const void* bytes, size_t len, struct raft_message* m, uint64_t* from,
                          uint64_t* to, void* in_place) {
    struct rbuf r = {bytes, len, 0, false};
    int type;
    int rv;
    unsigned version;
    unsigned flags;

    memset(m, 0, sizeof *m);
    if (bytes == NULL) {
        return RAFT_CORE_MALFORMED;
    }
    rv = decode_header(&r, &type, from, to);
    if (rv != 0) {
        return rv;
    }
    m->type = (enum raft_message_type)type;
    m->server_id = *from;
    version = r_u8(&r);
    switch (type) {
        case RAFT_REQUEST_VOTE: {
            struct raft_request_vote* a = &m->request_vote;
            a->version = (unsigned char)version;
            a->term = r_varint(&r);
            a->candidate_id = r_varint(&r);
            a->last_log_index = r_varint(&r);
            a->last_log_term = r_varint(&r);
            flags = r_u8(&r);
            a->disrupt_leader = (flags & 1u) != 0;
            a->pre_vote = (flags & 2u) != 0;
            if (r.failed || (flags & ~3u) != 0 || a->term == 0 || a->candidate_id == 0) {
                return RAFT_CORE_MALFORMED;
            }
            break;
        }
        case RAFT_REQUEST_VOTE_RESULT: {
            struct raft_request_vote_result* a = &m->request_vote_result;
            uint64_t features;
            uint64_t capacity;
            a->version = (unsigned char)version;
            a->term = r_varint(&r);
            flags = r_u8(&r);
            a->vote_granted = (flags & 1u) != 0;
            a->pre_vote = (flags & 2u) != 0;
            features = r_varint(&r);
            capacity = r_varint(&r);
            if (r.failed || (flags & ~3u) != 0 || !fits_u16(features) || !fits_u16(capacity)) {
                return RAFT_CORE_MALFORMED;
            }
            a->features = (unsigned short)features;
            a->capacity = (unsigned short)capacity;
            break;
        }
        case RAFT_APPEND_ENTRIES:
            m->append_entries.version = (unsigned char)version;
            rv = decode_append_entries(&r, &m->append_entries, in_place);
            if (rv != 0) {
                return rv;
            }
            break;
        case RAFT_APPEND_ENTRIES_RESULT: {
            struct raft_append_entries_result* a = &m->append_entries_result;
            uint64_t features;
            uint64_t capacity;
            a->version = (unsigned char)version;
            a->term = r_varint(&r);
            a->rejected = r_varint(&r);
            a->last_log_index = r_varint(&r);
            features = r_varint(&r);
            capacity = r_varint(&r);
            if (r.failed || !fits_u16(features) || !fits_u16(capacity)) {
                return RAFT_CORE_MALFORMED;
            }
            a->features = (unsigned short)features;
            a->capacity = (unsigned short)capacity;
            break;
        }
        case RAFT_INSTALL_SNAPSHOT:
            m->install_snapshot.version = (unsigned char)version;
            rv = decode_install_snapshot(&r, &m->install_snapshot);
            if (rv != 0) {
                return rv;
            }
            break;
        case RAFT_TIMEOUT_NOW: {
            struct raft_timeout_now* a = &m->timeout_now;
            a->version = (unsigned char)version;
            a->term = r_varint(&r);
            a->last_log_index = r_varint(&r);
            a->last_log_term = r_varint(&r);
            if (r.failed || a->term == 0) {
                return RAFT_CORE_MALFORMED;
            }
            break;
        }
        default:
            return RAFT_CORE_MALFORMED;
    }
    if (r.failed || r.pos != r.len) {
        if (in_place != NULL && type == RAFT_APPEND_ENTRIES && m->append_entries.n_entries > 0) {
            raft_free(m->append_entries.entries); /* the batch stays the caller's */
            m->append_entries.entries = NULL;
            m->append_entries.n_entries = 0;
        }
        message_release(m);
        return RAFT_CORE_MALFORMED;
    }
    return RAFT_CORE_OK;
}

static int message_entry(void* ctx, raft_index index, unsigned i, struct raft_core_entry* out) {
    const struct raft_append_entries* a = ctx;
    (void)index;
    out->term = a->entries[i].term;
    out->type = (int)a->entries[i].type;
    out->data = a->entries[i].buf.base;
    out->len = a->entries[i].buf.len;
    return 0;
}

int raft_core_message_peek(const void* bytes, size_t len, int* type, uint64_t* from, uint64_t* to) {
    struct rbuf r = {bytes, len, 0, false};
    if (bytes == NULL) {
        return RAFT_CORE_MALFORMED;
    }
    return decode_header(&r, type, from, to);
}

int raft_core_message_reencode(const void* bytes, size_t len, void** out, size_t* out_len) {
    struct raft_message m;
    struct wbuf w = {NULL, 0, 0, false};
    uint64_t from;
    uint64_t to;
    int rv = decode_message(bytes, len, &m, &from, &to, NULL);
    if (rv != 0) {
        return rv;
    }
    rv =
        encode_message(&w, &m, from, to, message_entry, &m.append_entries, &m.install_snapshot.conf,
                       m.install_snapshot.data.base, m.install_snapshot.data.len, NULL);
    message_release(&m);
    if (rv != 0) {
        free(w.p);
        return rv;
    }
    *out = w.p;
    *out_len = w.len;
    return RAFT_CORE_OK;
}

int raft_core_snapshot_message(const void* bytes, size_t len, uint64_t* index, uint64_t* term,
                               size_t* data_len) {
    struct raft_message m;
    uint64_t from;
    uint64_t to;
    int type;
    int rv = raft_core_message_peek(bytes, len, &type, &from, &to);
    if (rv != 0) {
        return rv;
    }
    if (type != RAFT_INSTALL_SNAPSHOT) {
        return RAFT_CORE_NOTFOUND;
    }
    rv = decode_message(bytes, len, &m, &from, &to, NULL);
    if (rv != 0) {
        return rv;
    }
    *index = m.install_snapshot.last_index;
    *term = m.install_snapshot.last_term;
    *data_len = m.install_snapshot.data.len;
    message_release(&m);
    return RAFT_CORE_OK;
}

int raft_core_snapshot_message_with(const void* bytes, size_t len, const void* data,
                                    size_t data_len, void** out, size_t* out_len) {
    struct raft_message m;
    struct wbuf w = {NULL, 0, 0, false};
    uint64_t from;
    uint64_t to;
    int rv = decode_message(bytes, len, &m, &from, &to, NULL);
    if (rv != 0) {
        return rv;
    }
    if (m.type != RAFT_INSTALL_SNAPSHOT) {
        message_release(&m);
        return RAFT_CORE_NOTFOUND;
    }
    rv = encode_message(&w, &m, from, to, message_entry, &m.append_entries,
                        &m.install_snapshot.conf, data, data_len, NULL);
    message_release(&m);
    if (rv != 0) {
        free(w.p);
        return rv;
    }
    *out = w.p;
    *out_len = w.len;
    return RAFT_CORE_OK;
}

int raft_core_message_describe(const void* bytes, size_t len, char* buf, size_t size) {
    struct raft_message m;
    uint64_t from;
    uint64_t to;
    int n = -1;
    if (decode_message(bytes, len, &m, &from, &to, NULL) != 0) {
        return -1;
    }
    switch (m.type) {
        case RAFT_REQUEST_VOTE: {
            const struct raft_request_vote* a = &m.request_vote;
            n = snprintf(buf, size,
                         "request_vote %llu->%llu v%u term=%llu candidate_id=%llu "
                         "last_log_index=%llu last_log_term=%llu disrupt_leader=%d pre_vote=%d",
                         (unsigned long long)from, (unsigned long long)to, a->version, a->term,
                         a->candidate_id, a->last_log_index, a->last_log_term,
                         (int)a->disrupt_leader, (int)a->pre_vote);
            break;
        }
        case RAFT_REQUEST_VOTE_RESULT: {
            const struct raft_request_vote_result* a = &m.request_vote_result;
            n = snprintf(buf, size,
                         "request_vote_result %llu->%llu v%u term=%llu vote_granted=%d "
                         "pre_vote=%d features=%u capacity=%u",
                         (unsigned long long)from, (unsigned long long)to, a->version, a->term,
                         (int)a->vote_granted, (int)a->pre_vote, a->features, a->capacity);
            break;
        }
        case RAFT_APPEND_ENTRIES: {
            const struct raft_append_entries* a = &m.append_entries;
            n = snprintf(buf, size,
                         "append_entries %llu->%llu v%u term=%llu prev_log_index=%llu "
                         "prev_log_term=%llu leader_commit=%llu n_entries=%u",
                         (unsigned long long)from, (unsigned long long)to, a->version, a->term,
                         a->prev_log_index, a->prev_log_term, a->leader_commit, a->n_entries);
            break;
        }
        case RAFT_APPEND_ENTRIES_RESULT: {
            const struct raft_append_entries_result* a = &m.append_entries_result;
            n = snprintf(buf, size,
                         "append_entries_result %llu->%llu v%u term=%llu rejected=%llu "
                         "last_log_index=%llu features=%u capacity=%u",
                         (unsigned long long)from, (unsigned long long)to, a->version, a->term,
                         a->rejected, a->last_log_index, a->features, a->capacity);
            break;
        }
        case RAFT_INSTALL_SNAPSHOT: {
            const struct raft_install_snapshot* a = &m.install_snapshot;
            n = snprintf(buf, size,
                         "install_snapshot %llu->%llu v%u term=%llu last_index=%llu "
                         "last_term=%llu conf_index=%llu servers=%u data_len=%zu",
                         (unsigned long long)from, (unsigned long long)to, a->version, a->term,
                         a->last_index, a->last_term, a->conf_index, a->conf.n, a->data.len);
            break;
        }
        case RAFT_TIMEOUT_NOW: {
            const struct raft_timeout_now* a = &m.timeout_now;
            n = snprintf(buf, size,
                         "timeout_now %llu->%llu v%u term=%llu last_log_index=%llu "
                         "last_log_term=%llu",
                         (unsigned long long)from, (unsigned long long)to, a->version, a->term,
                         a->last_log_index, a->last_log_term);
            break;
        }
    }
    message_release(&m);
    return n;
}

/* ---------------------------------------------------------------- core */

struct span { /* a batch of entries handed out and not yet reported durable */
    raft_index first;
    raft_index last;
};

struct peer_match {
    uint64_t id;
    raft_term term;
    raft_index index;
};

struct raft_core {
    struct raft raft;
    bool raft_initialized;
    bool started;
    bool broken; /* a failed start: only destroy is allowed */
    uint64_t id;
    struct raft_core_storage storage;
    char errmsg[RAFT_ERRMSG_BUF_SIZE + 64];

    /* The update of the last call and the memory it points at. */
    struct raft_core_update update;
    struct raft_core_entry* entries;
    size_t entries_cap;
    uint8_t* entry_data; /* the entries' bytes when copied */
    void* entry_batch;   /* libraft's batch the entries point into, until taken */
    const void* lent;    /* the caller's bytes a submit lends libraft as its batch */
    struct raft_core_message* messages;
    size_t messages_cap;
    size_t reference_bytes; /* AppendEntries leave out entries this long (0: none) */
    size_t message_entry_bytes; /* an AppendEntries carries at most this (0: any) */

    struct span* spans;
    size_t n_spans;
    size_t spans_cap;

    /* The last snapshot known: taken, installed or given at start. */
    raft_index snap_index;
    raft_term snap_term;
    struct raft_configuration snap_conf;

    /* A snapshot received from the leader, being written by the application. */
    bool installing;
    struct raft_snapshot_metadata install_meta;
    struct raft_buffer install_data;
    struct raft_core_server* install_servers;

    char peer_address[ADDRESS_BUF];
    /* The sender of the AppendEntries or InstallSnapshot being stepped when
     * its term is below ours (0: none): see push_message. */
    uint64_t stale_request_from;

    /* As leader, per peer: the highest index it reported stored (and so
     * matching ours) in `term`. See stale_rejection(). */
    struct peer_match* matches;
    size_t n_matches;
};

static int map_error(raft_core* c, int rv) {
    if (rv == 0) {
        return RAFT_CORE_OK;
    }
    snprintf(c->errmsg, sizeof c->errmsg, "%s: %s", raft_strerror(rv), raft_errmsg(&c->raft));
    switch (rv) {
        case RAFT_NOMEM:
            return RAFT_CORE_NOMEM;
        case RAFT_NOTLEADER:
            return RAFT_CORE_NOTLEADER;
        case RAFT_MALFORMED:
            return RAFT_CORE_MALFORMED;
        case RAFT_BADID:
            return RAFT_CORE_BADID;
        case RAFT_NOTFOUND:
            return RAFT_CORE_NOTFOUND;
        case RAFT_SHUTDOWN:
            return RAFT_CORE_SHUTDOWN;
        case RAFT_INVALID:
        case RAFT_CANTCHANGE:
            return RAFT_CORE_INVALID;
        default:
            return RAFT_CORE_FAILED;
    }
}

static int fail(raft_core* c, int error, const char* what) {
    snprintf(c->errmsg, sizeof c->errmsg, "%s", what);
    return error;
}

static uint64_t leader_of(const raft_core* c) {
    raft_id id = 0;
    const char* address = NULL;
    raft_leader((struct raft*)&c->raft, &id, &address);
    return id;
}

static void fill_always(raft_core* c) {
    struct raft_core_update* u = &c->update;
    struct raft* r = &c->raft;
    u->term = raft_current_term(r);
    u->voted_for = raft_voted_for(r);
    u->state = (int)raft_state(r);
    u->leader_id = leader_of(c);
    u->commit_index = raft_commit_index(r);
    u->last_index = raft_last_index(r);
    u->timeout = raft_timeout(r);
}

/* Releases the memory of the previous update and starts a new one. */
static void begin_call(raft_core* c, const struct raft_core_update** out) {
    size_t i;
    for (i = 0; i < c->update.n_messages; i++) {
        free((void*)c->messages[i].data);
        free((void*)c->messages[i].holes);
    }
    free(c->entry_data);
    c->entry_data = NULL;
    raft_free(c->entry_batch);
    c->entry_batch = NULL;
    memset(&c->update, 0, sizeof c->update);
    c->errmsg[0] = '\0';
    if (c->raft_initialized) {
        fill_always(c);
    }
    if (out != NULL) {
        *out = &c->update;
    }
}

static int push_span(raft_core* c, raft_index first, raft_index last) {
    if (c->n_spans == c->spans_cap) {
        size_t cap = c->spans_cap == 0 ? 8 : c->spans_cap * 2;
        struct span* p = realloc(c->spans, cap * sizeof *p);
        if (p == NULL) {
            return RAFT_CORE_NOMEM;
        }
        c->spans = p;
        c->spans_cap = cap;
    }
    c->spans[c->n_spans].first = first;
    c->spans[c->n_spans].last = last;
    c->n_spans++;
    return RAFT_CORE_OK;
}

/* Copies entries into the update (they stay the core's until the next call). */
static int update_set_entries(raft_core* c, raft_index index, const struct raft_entry* src,
                              const struct raft_core_entry* core_src, size_t n) {
    size_t total = 0;
    size_t i;
    uint8_t* cursor;
    bool one_batch = src != NULL && n > 0;
    if (n > c->entries_cap) {
        struct raft_core_entry* p = realloc(c->entries, n * sizeof *p);
        if (p == NULL) {
            return RAFT_CORE_NOMEM;
        }
        c->entries = p;
        c->entries_cap = n;
    }
    c->update.flags |= RAFT_CORE_UPDATE_ENTRIES;
    c->update.entries_index = index;
    c->update.entries = c->entries;
    c->update.n_entries = n;
    for (i = 1; one_batch && i < n; i++) {
        one_batch = src[i].batch == src[0].batch;
    }
    if (one_batch) {
        /* libraft's entries in one batch, which is ours after the step: the
         * update points into it and the core keeps it (or the caller takes
         * it), so no entry is copied, however long. */
        for (i = 0; i < n; i++) {
            c->entries[i].term = src[i].term;
            c->entries[i].type = (int)src[i].type;
            c->entries[i].data = src[i].buf.base;
            c->entries[i].len = src[i].buf.len;
        }
        raft_free(c->entry_batch);
        c->entry_batch = src[0].batch == c->lent ? NULL : src[0].batch;
        return RAFT_CORE_OK;
    }
    for (i = 0; i < n; i++) {
        total += src != NULL ? src[i].buf.len : core_src[i].len;
    }
    free(c->entry_data);
    c->entry_data = malloc(total > 0 ? total : 1);
    if (c->entry_data == NULL) {
        return RAFT_CORE_NOMEM;
    }
    cursor = c->entry_data;
    for (i = 0; i < n; i++) {
        struct raft_core_entry* e = &c->entries[i];
        const void* data = src != NULL ? src[i].buf.base : core_src[i].data;
        e->term = src != NULL ? src[i].term : core_src[i].term;
        e->type = src != NULL ? (int)src[i].type : core_src[i].type;
        e->len = src != NULL ? src[i].buf.len : core_src[i].len;
        if (e->len > 0) {
            memcpy(cursor, data, e->len);
        }
        e->data = cursor;
        cursor += e->len;
    }
    return RAFT_CORE_OK;
}

static int outgoing_entry(void* ctx, raft_index index, unsigned i, struct raft_core_entry* out) {
    raft_core* c = ctx;
    const struct raft_core_update* u = &c->update;
    (void)i;
    if (u->n_entries > 0 && index >= u->entries_index && index < u->entries_index + u->n_entries) {
        *out = u->entries[index - u->entries_index];
        return 0;
    }
    if (c->storage.entry == NULL) {
        return -1;
    }
    return c->storage.entry(c->storage.ctx, index, out);
}

static int push_one_message(raft_core* c, const struct raft_message* m) {
    struct wbuf w = {NULL, 0, 0, false};
    struct holes holes = {NULL, 0, 0, 0};
    const void* data = NULL;
    size_t data_len = 0;
    struct raft_message told_term;
    int rv;
    if (m->type == RAFT_REQUEST_VOTE_RESULT && m->request_vote_result.pre_vote &&
        !m->request_vote_result.vote_granted && c->raft.current_term > m->request_vote_result.term) {
        /* libraft answers a pre-vote with the request's term, so a
         * pre-candidate behind on terms never learns of the higher one. When
         * the voters ahead on terms are behind on the log and the voters ahead
         * on the log are behind on terms, no pre-vote can ever succeed: the
         * group stays without a leader (found by the simulation). A refusal
         * carries our term instead, and a pre-candidate more than one term
         * behind takes it (recvRequestVoteResult), as in etcd's Raft. */
        told_term = *m;
        told_term.request_vote_result.term = c->raft.current_term;
        m = &told_term;
    }
    if (m->type == RAFT_APPEND_ENTRIES_RESULT && c->stale_request_from != 0 &&
        m->server_id == c->stale_request_from) {
        /* 0.22.1 answers an AppendEntries or InstallSnapshot of an older
         * term without setting last_log_index, and the InstallSnapshot one
         * as a success. When the sender leads again in our term by the time
         * the answer arrives, it takes the garbage for what this node holds
         * and counts it towards commits (found by the simulation: a
         * committed entry lost). Index 0 makes the answer one it ignores
         * (cowsql/raft fixed it after 0.22.1). */
        told_term = *m;
        told_term.append_entries_result.last_log_index = 0;
        m = &told_term;
    }
    if (m->type == RAFT_INSTALL_SNAPSHOT) {
        if (m->install_snapshot.last_index != c->snap_index || c->storage.snapshot_data == NULL ||
            c->storage.snapshot_data(c->storage.ctx, c->snap_index, &data, &data_len) != 0) {
            return RAFT_CORE_NOTFOUND; /* dropped: libraft retries after its timeout */
        }
    }
    holes.min_len = c->reference_bytes;
    rv = encode_message(&w, m, c->id, m->server_id, outgoing_entry, c, &c->snap_conf, data,
                        data_len,
                        m->type == RAFT_APPEND_ENTRIES && c->reference_bytes > 0 ? &holes : NULL);
    if (rv != 0) {
        free(w.p);
        free(holes.p);
        return rv;
    }
    if (c->update.n_messages == c->messages_cap) {
        size_t cap = c->messages_cap == 0 ? 8 : c->messages_cap * 2;
        struct raft_core_message* p = realloc(c->messages, cap * sizeof *p);
        if (p == NULL) {
            free(w.p);
            free(holes.p);
            return RAFT_CORE_NOMEM;
        }
        c->messages = p;
        c->messages_cap = cap;
    }
    c->messages[c->update.n_messages].to = m->server_id;
    c->messages[c->update.n_messages].data = w.p;
    c->messages[c->update.n_messages].len = w.len;
    c->messages[c->update.n_messages].holes = holes.p;
    c->messages[c->update.n_messages].n_holes = holes.n;
    c->update.n_messages++;
    c->update.messages = c->messages;
    c->update.flags |= RAFT_CORE_UPDATE_MESSAGES;
    return RAFT_CORE_OK;
}

/* libraft puts up to max_inflight_entries (32) entries in one AppendEntries
 * whatever their length, and the peer network refuses a frame past its bound:
 * a follower behind by a few long entries would be sent the same refused
 * batch forever. A batch past message_entry_bytes goes as consecutive
 * messages instead, each a whole AppendEntries whose previous entry is the
 * last of the one before it (the first carries at least one entry however
 * long): the follower takes them in order and answers each, as it would
 * answer libraft's own pipelined messages. */
static int push_message(raft_core* c, const struct raft_message* m) {
    struct raft_message part;
    struct raft_core_entry e;
    raft_index first;
    raft_index end;
    int rv;
    if (m->type != RAFT_APPEND_ENTRIES || c->message_entry_bytes == 0 ||
        m->append_entries.n_entries < 2) {
        return push_one_message(c, m);
    }
    part = *m;
    first = m->append_entries.prev_log_index + 1;
    end = first + m->append_entries.n_entries;
    while (first < end) {
        raft_index next = first;
        raft_term last_term = 0;
        size_t room = c->message_entry_bytes;
        for (; next < end; next++) {
            if (outgoing_entry(c, next, 0, &e) != 0) {
                return RAFT_CORE_NOTFOUND;
            }
            if (next > first && e.len > room) {
                break;
            }
            room = e.len >= room ? 0 : room - e.len;
            last_term = e.term;
        }
        part.append_entries.n_entries = (unsigned)(next - first);
        rv = push_one_message(c, &part);
        if (rv != 0) {
            return rv;
        }
        part.append_entries.prev_log_index = next - 1;
        part.append_entries.prev_log_term = last_term;
        first = next;
    }
    return RAFT_CORE_OK;
}

static int servers_of(const struct raft_configuration* conf, struct raft_core_server** out) {
    unsigned i;
    struct raft_core_server* s = malloc((conf->n > 0 ? conf->n : 1) * sizeof *s);
    if (s == NULL) {
        return RAFT_CORE_NOMEM;
    }
    for (i = 0; i < conf->n; i++) {
        s[i].id = conf->servers[i].id;
        s[i].role = conf->servers[i].role;
    }
    free(*out);
    *out = s;
    return RAFT_CORE_OK;
}

/* Turns libraft's update into ours. Takes over what 0.22.1 leaves to the
 * caller: the entries batch (kept until the next call or taken by the
 * caller, or freed here when its entries were copied) and the snapshot
 * being installed (kept until raft_core_persisted_snapshot). */
static int collect(raft_core* c, struct raft_update* u, int prev_state, uint64_t prev_leader) {
    int rv = RAFT_CORE_OK;
    unsigned i;
    if (u->flags & RAFT_UPDATE_CURRENT_TERM) {
        c->update.flags |= RAFT_CORE_UPDATE_TERM;
    }
    if (u->flags & RAFT_UPDATE_VOTED_FOR) {
        c->update.flags |= RAFT_CORE_UPDATE_VOTE;
    }
    if (u->flags & RAFT_UPDATE_ENTRIES) {
        rv = update_set_entries(c, u->entries.index, u->entries.batch, NULL, u->entries.n);
        if (rv == 0) {
            rv = push_span(c, u->entries.index, u->entries.index + u->entries.n - 1);
        }
    }
    if (u->flags & RAFT_UPDATE_SNAPSHOT) {
        /* The metadata's configuration and the chunk are the received
         * message's: ours until libraft takes the configuration back in
         * RAFT_PERSISTED_SNAPSHOT. */
        c->installing = true;
        c->install_meta = u->snapshot.metadata;
        c->install_data = u->snapshot.chunk;
        c->n_spans = 0; /* the whole log is replaced */
        if (rv == 0) {
            rv = servers_of(&c->install_meta.configuration, &c->install_servers);
        }
        c->update.flags |= RAFT_CORE_UPDATE_SNAPSHOT;
        c->update.snapshot.index = c->install_meta.index;
        c->update.snapshot.term = c->install_meta.term;
        c->update.snapshot.configuration_index = c->install_meta.configuration_index;
        c->update.snapshot.servers = c->install_servers;
        c->update.snapshot.n_servers = c->install_meta.configuration.n;
        c->update.snapshot.data = c->install_data.base;
        c->update.snapshot.len = c->install_data.len;
    }
    if (u->flags & RAFT_UPDATE_MESSAGES) {
        for (i = 0; i < u->messages.n; i++) {
            int mrv = push_message(c, &u->messages.batch[i]);
            if (mrv == RAFT_CORE_NOMEM && rv == 0) {
                rv = mrv;
            }
            /* Other failures drop the message, as a lossy network would. */
        }
    }
    if ((u->flags & RAFT_UPDATE_ENTRIES) && u->entries.batch[0].batch != c->entry_batch &&
        u->entries.batch[0].batch != c->lent) {
        raft_free(u->entries.batch[0].batch); /* copied */
    }
    fill_always(c);
    if ((u->flags & RAFT_UPDATE_STATE) || c->update.state != prev_state ||
        c->update.leader_id != prev_leader) {
        c->update.flags |= RAFT_CORE_UPDATE_STATE;
    }
    if (u->flags & RAFT_UPDATE_COMMIT_INDEX) {
        c->update.flags |= RAFT_CORE_UPDATE_COMMIT;
    }
    if (u->flags & RAFT_UPDATE_TIMEOUT) {
        c->update.flags |= RAFT_CORE_UPDATE_TIMEOUT;
    }
    return rv;
}

/* Steps libraft with `event` and collects the update; `*u` keeps libraft's
 * update for the event-specific clean-up of the caller. */
static int step(raft_core* c, struct raft_event* event, struct raft_update* u) {
    int prev_state = (int)raft_state(&c->raft);
    uint64_t prev_leader = leader_of(c);
    int rv;
    int crv;
    memset(u, 0, sizeof *u);
    rv = raft_step(&c->raft, event, u);
    crv = collect(c, u, prev_state, prev_leader);
    if (rv != 0) {
        return map_error(c, rv);
    }
    if (crv != 0) {
        return fail(c, crv, "out of memory while collecting an update");
    }
    return RAFT_CORE_OK;
}

static void event_init(struct raft_event* e, enum raft_event_type type, uint64_t now) {
    memset(e, 0, sizeof *e);
    e->time = now;
    e->type = type;
}

static unsigned default_seed(uint64_t id) {
    uint64_t z = id + 0x9e3779b97f4a7c15ull;
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
    return (unsigned)(z ^ (z >> 31));
}

raft_core* raft_core_create(uint64_t id, const char* address,
                            const struct raft_core_storage* storage) {
    char id_addr[ADDRESS_BUF];
    raft_core* c;
    /* No run-time version check: 0.22.1 declares raft_version_number() in
     * raft.h but does not export it from libraft.so (no RAFT_API). */
    if (id == 0) {
        return NULL;
    }
    c = calloc(1, sizeof *c);
    if (c == NULL) {
        return NULL;
    }
    c->id = id;
    if (storage != NULL) {
        c->storage = *storage;
    }
    raft_configuration_init(&c->snap_conf);
    raft_configuration_init(&c->install_meta.configuration);
    id_address(id, id_addr);
    /* raft_init copies the address with strlen(): it must not be NULL. */
    if (raft_init(&c->raft, NULL, NULL, id, address != NULL ? address : id_addr) != 0) {
        free(c);
        return NULL;
    }
    c->raft_initialized = true;
    /* libraft formats every trace message (snprintf) before its stderr
     * tracer looks whether tracing is on: about 2,500 instructions per step
     * for nothing. Without a tracer nothing is formatted; LIBRAFT_TRACE keeps
     * it for debugging. */
    if (getenv("LIBRAFT_TRACE") == NULL) {
        c->raft.tracer = NULL;
    }
    /* raft_init without a raft_io leaves the generator state unset. */
    raft_seed(&c->raft, default_seed(id));
    begin_call(c, NULL);
    return c;
}

void raft_core_destroy(raft_core* c) {
    if (c == NULL) {
        return;
    }
    begin_call(c, NULL);
    if (c->raft_initialized) {
        raft_close(&c->raft, NULL); /* synchronous without a raft_io */
    }
    if (c->installing) {
        raft_configuration_close(&c->install_meta.configuration);
        raft_free(c->install_data.base);
    }
    raft_configuration_close(&c->snap_conf);
    free(c->install_servers);
    free(c->entries);
    free(c->messages);
    free(c->spans);
    free(c->matches);
    free(c);
}

int raft_core_set_timeouts(raft_core* c, unsigned election_ms, unsigned heartbeat_ms) {
    if (c->started || election_ms == 0 || heartbeat_ms == 0 || heartbeat_ms >= election_ms) {
        return fail(c, RAFT_CORE_INVALID, "timeouts: before start, 0 < heartbeat < election");
    }
    raft_set_election_timeout(&c->raft, election_ms);
    raft_set_heartbeat_timeout(&c->raft, heartbeat_ms);
    return RAFT_CORE_OK;
}

void raft_core_set_seed(raft_core* c, unsigned seed) { raft_seed(&c->raft, seed); }

void raft_core_set_pre_vote(raft_core* c, int enabled) {
    raft_set_pre_vote(&c->raft, enabled != 0);
}

void raft_core_set_install_snapshot_timeout(raft_core* c, unsigned ms) {
    raft_set_install_snapshot_timeout(&c->raft, ms);
}

static int check_start(raft_core* c, const struct raft_core_persisted_state* s) {
    size_t i;
    raft_term prev;
    if (c->started || c->broken) {
        return fail(c, RAFT_CORE_INVALID, "already started");
    }
    if (s->term == 0) {
        if (s->voted_for != 0 || s->snapshot != NULL || s->n_entries != 0) {
            return fail(c, RAFT_CORE_INVALID, "state without a term");
        }
        return RAFT_CORE_OK;
    }
    if (s->n_entries > 0 && s->entries == NULL) {
        return fail(c, RAFT_CORE_INVALID, "entries missing");
    }
    if (s->snapshot != NULL) {
        const struct raft_core_snapshot* snap = s->snapshot;
        if (snap->index == 0 || snap->term == 0 || snap->term > s->term ||
            snap->configuration_index == 0 || snap->configuration_index > snap->index ||
            snap->n_servers == 0 || s->start_index == 0 || s->start_index > snap->index + 1 ||
            s->start_index + s->n_entries < snap->index + 1) {
            return fail(c, RAFT_CORE_INVALID, "snapshot inconsistent with the entries");
        }
    } else if (s->start_index > 1 || (s->n_entries > 0 && s->entries[0].type != RAFT_CHANGE)) {
        return fail(c, RAFT_CORE_INVALID,
                    "without a snapshot the log starts at 1 with the configuration");
    }
    prev = s->snapshot != NULL && s->start_index == s->snapshot->index + 1 ? s->snapshot->term : 1;
    for (i = 0; i < s->n_entries; i++) {
        if (s->entries[i].term == 0 || s->entries[i].term < prev || s->entries[i].term > s->term ||
            !valid_entry_type((unsigned)s->entries[i].type) ||
            (s->entries[i].len > 0 && s->entries[i].data == NULL)) {
            return fail(c, RAFT_CORE_INVALID, "entry terms out of order or types unknown");
        }
        prev = s->entries[i].term;
    }
    return RAFT_CORE_OK;
}

static int start(raft_core* c, uint64_t now, const struct raft_core_persisted_state* s) {
    struct raft_event e;
    struct raft_update u;
    struct raft_snapshot_metadata meta;
    struct raft_entry* entries = NULL;
    uint8_t* batch = NULL;
    size_t total = 0;
    size_t i;
    int rv = check_start(c, s);
    if (rv != 0) {
        return rv;
    }
    event_init(&e, RAFT_START, now);
    e.start.term = s->term;
    e.start.voted_for = s->voted_for;
    e.start.start_index = s->snapshot == NULL ? 1 : s->start_index;
    if (s->snapshot != NULL) {
        memset(&meta, 0, sizeof meta);
        meta.index = s->snapshot->index;
        meta.term = s->snapshot->term;
        meta.configuration_index = s->snapshot->configuration_index;
        rv = conf_from_servers(s->snapshot->servers, s->snapshot->n_servers, &meta.configuration);
        if (rv == 0) {
            rv = conf_copy(&meta.configuration, &c->snap_conf);
            if (rv != 0) {
                raft_configuration_close(&meta.configuration);
            }
        }
        if (rv != 0) {
            return rv == RAFT_NOMEM ? fail(c, RAFT_CORE_NOMEM, "no memory")
                                    : fail(c, RAFT_CORE_INVALID, "snapshot configuration");
        }
        c->snap_index = meta.index;
        c->snap_term = meta.term;
        e.start.metadata = &meta; /* 0.22.1 moves the configuration into the raft */
    }
    if (s->n_entries > 0) {
        for (i = 0; i < s->n_entries; i++) {
            total += s->entries[i].len;
        }
        entries = raft_malloc(s->n_entries * sizeof *entries);
        batch = raft_malloc(total > 0 ? total : 1);
        if (entries == NULL || batch == NULL) {
            raft_free(entries);
            raft_free(batch);
            c->broken = true;
            return fail(c, RAFT_CORE_NOMEM, "no memory");
        }
        total = 0;
        for (i = 0; i < s->n_entries; i++) {
            entries[i].term = s->entries[i].term;
            entries[i].type = (enum raft_entry_type)s->entries[i].type;
            entries[i].buf.base = batch + total;
            entries[i].buf.len = s->entries[i].len;
            entries[i].batch = batch;
            if (s->entries[i].len > 0) {
                memcpy(batch + total, s->entries[i].data, s->entries[i].len);
            }
            total += s->entries[i].len;
        }
        e.start.entries = entries;
        e.start.n_entries = (unsigned)s->n_entries;
    }
    rv = step(c, &e, &u);
    if (rv != 0) {
        /* On failure libraft 0.22.1 has destroyed the entries and their
         * batches itself (entryBatchesDestroy) on every path but an
         * allocation failure while self-electing: leak rather than risk a
         * double free. The raft is unusable now. */
        c->broken = true;
        return rv;
    }
    raft_free(batch);
    raft_free(entries);
    c->started = true;
    return RAFT_CORE_OK;
}

int raft_core_start(raft_core* c, uint64_t now, const struct raft_core_persisted_state* state,
                    const struct raft_core_update** update) {
    begin_call(c, update);
    return start(c, now, state);
}

int raft_core_bootstrap(raft_core* c, uint64_t now, const uint64_t* voter_ids, size_t n_voters,
                        const struct raft_core_update** update) {
    struct raft_configuration conf;
    struct raft_buffer buf;
    struct raft_core_entry entry;
    struct raft_core_persisted_state s;
    size_t i;
    int rv;
    begin_call(c, update);
    if (n_voters == 0 || voter_ids == NULL) {
        return fail(c, RAFT_CORE_INVALID, "no voters");
    }
    raft_configuration_init(&conf);
    for (i = 0; i < n_voters; i++) {
        char address[ADDRESS_BUF];
        if (voter_ids[i] == 0) {
            raft_configuration_close(&conf);
            return fail(c, RAFT_CORE_INVALID, "voter id 0");
        }
        id_address(voter_ids[i], address);
        rv = raft_configuration_add(&conf, voter_ids[i], address, RAFT_VOTER);
        if (rv != 0) {
            raft_configuration_close(&conf);
            return rv == RAFT_NOMEM ? fail(c, RAFT_CORE_NOMEM, "no memory")
                                    : fail(c, RAFT_CORE_INVALID, "duplicate voter");
        }
    }
    rv = raft_configuration_encode(&conf, &buf);
    raft_configuration_close(&conf);
    if (rv != 0) {
        return fail(c, RAFT_CORE_NOMEM, "no memory");
    }
    entry.term = 1;
    entry.type = RAFT_CORE_CHANGE;
    entry.data = buf.base;
    entry.len = buf.len;
    memset(&s, 0, sizeof s);
    s.term = 1;
    s.start_index = 1;
    s.entries = &entry;
    s.n_entries = 1;
    rv = start(c, now, &s);
    if (rv == 0) {
        /* The application persists term 1 and entry 1; libraft counts the
         * entry as durable already (it is not in the spans). */
        c->update.flags |= RAFT_CORE_UPDATE_TERM;
        rv = update_set_entries(c, 1, NULL, &entry, 1);
    }
    raft_free(buf.base);
    return rv;
}

/* libraft 0.22.1 (progressMaybeDecrement) takes a rejection that a probing
 * leader receives at next_index - 1 even when a later answer of the same
 * follower already matched that index: next_index drops to match_index, and
 * the leader then sends that follower only heartbeats, for good (the count
 * of entries in flight wraps). A rejection at or below what the follower
 * reported stored in this term is stale (it was overtaken by the success):
 * it is dropped here. Returns true when `a` is one. */
static bool stale_rejection(raft_core* c, uint64_t from, const struct raft_append_entries_result* a) {
    struct raft* r = &c->raft;
    struct peer_match* p = NULL;
    size_t i;
    if (raft_state(r) != RAFT_LEADER || a->term != raft_current_term(r)) {
        return false;
    }
    for (i = 0; i < c->n_matches && p == NULL; i++) {
        if (c->matches[i].id == from) {
            p = &c->matches[i];
        }
    }
    if (p == NULL) {
        struct peer_match* grown = realloc(c->matches, (c->n_matches + 1) * sizeof *grown);
        if (grown == NULL) {
            return false; /* no memory: libraft judges it alone */
        }
        c->matches = grown;
        p = &c->matches[c->n_matches++];
        p->id = from;
        p->term = 0;
    }
    if (p->term != a->term) {
        p->term = a->term;
        p->index = 0;
    }
    if (a->rejected == 0) {
        raft_index stored = a->last_log_index;
        if (stored > raft_last_index(r)) {
            stored = raft_last_index(r); /* a leftover of an older term: libraft's bound */
        }
        if (stored > p->index) {
            p->index = stored;
        }
        return false;
    }
    return a->rejected <= p->index;
}

/* libraft 0.22.1 (checkLogMatchingProperty) rejects an AppendEntries whose
 * previous entry lies below what its snapshot kept (it finds no term there),
 * and ignores the older snapshot the leader then sends ("have more recent
 * snapshot"): a follower whose snapshot is ahead of what the leader knows of
 * it (it restarted from a checkpoint past the entries it had acknowledged)
 * never catches up. Entries up to the snapshot are committed, so a leader
 * of this term or a later one holds the same: the message is anchored at
 * the snapshot instead, without the entries it covers. */
static void anchor_at_snapshot(raft_core* c, struct raft_append_entries* a) {
    struct raft* r = &c->raft;
    raft_index skip;
    if (c->snap_index == 0 || a->prev_log_index >= c->snap_index ||
        a->term < raft_current_term(r) || raft_state(r) == RAFT_LEADER) {
        return;
    }
    skip = c->snap_index - a->prev_log_index;
    a->prev_log_index = c->snap_index;
    a->prev_log_term = c->snap_term;
    if (skip >= a->n_entries) {
        if (a->n_entries > 0) {
            raft_free(a->entries[0].batch); /* libraft frees it only with entries */
        }
        a->n_entries = 0;
        return;
    }
    a->entries += skip;
    a->n_entries -= (unsigned)skip;
}

/* `in_place`: the message's memory (`bytes`), the core's to free. */
static int receive(raft_core* c, uint64_t now, const void* bytes, size_t len, void* in_place,
                   const struct raft_core_update** update);

int raft_core_receive(raft_core* c, uint64_t now, const void* bytes, size_t len,
                      const struct raft_core_update** update) {
    return receive(c, now, bytes, len, NULL, update);
}

void* raft_core_alloc_message(size_t len) { return raft_malloc(len > 0 ? len : 1); }

int raft_core_receive_owned(raft_core* c, uint64_t now, void* bytes, size_t len,
                            const struct raft_core_update** update) {
    return receive(c, now, bytes, len, bytes, update);
}

static int receive(raft_core* c, uint64_t now, const void* bytes, size_t len, void* in_place,
                   const struct raft_core_update** update) {
    /* Whether `in_place` became the entries' batch, which the paths that
     * free or keep the batch then take care of; otherwise it is freed here. */
    bool batch_is_message = false;
    struct raft_message m;
    struct raft_event e;
    struct raft_update u;
    struct raft_configuration held_conf;
    struct raft_buffer held_data = {NULL, 0};
    struct raft_entry* entries = NULL; /* an AppendEntries' array, ours */
    bool held = false;
    uint64_t from;
    uint64_t to;
    int rv;
    begin_call(c, update);
    if (!c->started) {
        raft_free(in_place);
        return fail(c, RAFT_CORE_INVALID, "not started");
    }
    rv = decode_message(bytes, len, &m, &from, &to, in_place);
    if (rv != 0) {
        raft_free(in_place);
        return fail(c, rv, "message does not decode");
    }
    batch_is_message =
        in_place != NULL && m.type == RAFT_APPEND_ENTRIES && m.append_entries.n_entries > 0;
    if (!batch_is_message) {
        raft_free(in_place); /* nothing of the message points into it */
    }
    if (to != c->id || from == c->id) {
        message_release(&m);
        return fail(c, RAFT_CORE_INVALID, "message not for this node");
    }
    if (m.type == RAFT_APPEND_ENTRIES_RESULT && stale_rejection(c, from, &m.append_entries_result)) {
        message_release(&m);
        return RAFT_CORE_OK;
    }
    if (m.type == RAFT_APPEND_ENTRIES) {
        entries = m.append_entries.entries;
        anchor_at_snapshot(c, &m.append_entries);
    }
    id_address(from, c->peer_address);
    m.server_address = c->peer_address;
    if (m.type == RAFT_INSTALL_SNAPSHOT && c->raft.snapshot.installing) {
        /* 0.22.1 neither uses nor frees an InstallSnapshot that arrives while
         * another is being written: hand it an empty one and free ours. */
        held_conf = m.install_snapshot.conf;
        held_data = m.install_snapshot.data;
        raft_configuration_init(&m.install_snapshot.conf);
        m.install_snapshot.data.base = NULL;
        m.install_snapshot.data.len = 0;
        held = true;
    }
    if ((m.type == RAFT_APPEND_ENTRIES && m.append_entries.term < raft_current_term(&c->raft)) ||
        (m.type == RAFT_INSTALL_SNAPSHOT &&
         m.install_snapshot.term < raft_current_term(&c->raft))) {
        c->stale_request_from = from;
    }
    event_init(&e, RAFT_RECEIVE, now);
    e.receive.message = &m;
    rv = step(c, &e, &u);
    c->stale_request_from = 0;
    /* libraft freed the entries batch (or handed it back in the update,
     * freed by collect); the entries array is ours. The InstallSnapshot
     * configuration and data were freed by libraft, or taken by collect. */
    raft_free(entries);
    if (held) {
        raft_configuration_close(&held_conf);
        raft_free(held_data.base);
    }
    return rv;
}

int raft_core_persisted_entries(raft_core* c, uint64_t now, uint64_t index,
                                const struct raft_core_update** update) {
    struct raft_event e;
    struct raft_update u;
    raft_index durable;
    size_t k;
    size_t j;
    begin_call(c, update);
    if (!c->started) {
        return fail(c, RAFT_CORE_INVALID, "not started");
    }
    for (k = 0; k < c->n_spans && c->spans[k].last != index; k++) {
    }
    if (k == c->n_spans) {
        return RAFT_CORE_OK; /* stale, or entry 1 of a bootstrap */
    }
    /* Batches handed out later may have truncated part of this one. */
    durable = index;
    for (j = k + 1; j < c->n_spans; j++) {
        if (c->spans[j].first - 1 < durable) {
            durable = c->spans[j].first - 1;
        }
    }
    memmove(c->spans, c->spans + k + 1, (c->n_spans - k - 1) * sizeof *c->spans);
    c->n_spans -= k + 1;
    if (durable <= c->raft.last_stored || durable > raft_last_index(&c->raft)) {
        return RAFT_CORE_OK;
    }
    if (raft_state(&c->raft) == RAFT_CANDIDATE) {
        /* libraft asserts that no write completes as candidate (it never
         * campaigns with writes pending). */
        return fail(c, RAFT_CORE_INVALID, "persisted entries reported as candidate");
    }
    event_init(&e, RAFT_PERSISTED_ENTRIES, now);
    e.persisted_entries.index = durable;
    return step(c, &e, &u);
}

int raft_core_persisted_snapshot(raft_core* c, uint64_t now,
                                 const struct raft_core_update** update) {
    struct raft_event e;
    struct raft_update u;
    struct raft_configuration copy;
    int rv;
    begin_call(c, update);
    if (!c->installing || raft_state(&c->raft) != RAFT_FOLLOWER) {
        return fail(c, RAFT_CORE_INVALID, "no snapshot being installed");
    }
    rv = conf_copy(&c->install_meta.configuration, &copy);
    if (rv != 0) {
        return fail(c, RAFT_CORE_NOMEM, "no memory");
    }
    event_init(&e, RAFT_PERSISTED_SNAPSHOT, now);
    e.persisted_snapshot.metadata = c->install_meta; /* the configuration goes to the raft */
    e.persisted_snapshot.offset = 0;
    e.persisted_snapshot.last = true;
    raft_configuration_close(&c->snap_conf);
    c->snap_conf = copy;
    c->snap_index = c->install_meta.index;
    c->snap_term = c->install_meta.term;
    c->installing = false;
    raft_configuration_init(&c->install_meta.configuration);
    rv = step(c, &e, &u);
    raft_free(c->install_data.base);
    c->install_data.base = NULL;
    c->install_data.len = 0;
    return rv;
}

int raft_core_timeout(raft_core* c, uint64_t now, const struct raft_core_update** update) {
    struct raft_event e;
    struct raft_update u;
    begin_call(c, update);
    if (!c->started) {
        return fail(c, RAFT_CORE_INVALID, "not started");
    }
    event_init(&e, RAFT_TIMEOUT, now);
    return step(c, &e, &u);
}

static int submit(raft_core* c, uint64_t now, int type, const void* data, size_t len,
                  uint64_t* index, const struct raft_core_update** update) {
    struct raft_event e;
    struct raft_update u;
    struct raft_entry* entry;
    void* batch;
    raft_index next;
    int rv;
    begin_call(c, update);
    if (!c->started) {
        return fail(c, RAFT_CORE_INVALID, "not started");
    }
    /* The caller's bytes are the batch (0.22.1 keeps no entry's bytes after
     * the step and hands the batch back in the update, or leaves it alone
     * on an error), so an entry is not copied here, however long. libraft
     * asserts a batch: an empty entry gets one of its own. */
    entry = raft_malloc(sizeof *entry);
    batch = len > 0 ? (void*)data : raft_malloc(1);
    if (entry == NULL || batch == NULL) {
        raft_free(entry);
        if (len == 0) {
            raft_free(batch);
        }
        return fail(c, RAFT_CORE_NOMEM, "no memory");
    }
    c->lent = len > 0 ? data : NULL;
    next = raft_last_index(&c->raft) + 1;
    entry->term = raft_current_term(&c->raft); /* the caller sets the term */
    entry->type = (enum raft_entry_type)type;
    entry->buf.base = batch;
    entry->buf.len = len;
    entry->batch = batch;
    event_init(&e, RAFT_SUBMIT, now);
    e.submit.entries = entry;
    e.submit.n = 1;
    rv = step(c, &e, &u);
    c->lent = NULL;
    if (!(u.flags & RAFT_UPDATE_ENTRIES) && len == 0) {
        raft_free(batch); /* not taken (an error): still ours */
    }
    raft_free(entry);
    if (rv == 0 && index != NULL) {
        *index = next;
    }
    return rv;
}

int raft_core_submit(raft_core* c, uint64_t now, const void* data, size_t len, uint64_t* index,
                     const struct raft_core_update** update) {
    if (len > 0 && data == NULL) {
        begin_call(c, update);
        return fail(c, RAFT_CORE_INVALID, "no data");
    }
    return submit(c, now, RAFT_COMMAND, data, len, index, update);
}

void* raft_core_take_entries(raft_core* c) {
    void* batch = c->entry_batch;
    c->entry_batch = NULL;
    return batch;
}

void raft_core_free_entries(void* batch) { raft_free(batch); }

void raft_core_set_reference_bytes(raft_core* c, size_t min_len) { c->reference_bytes = min_len; }
void raft_core_set_message_entry_bytes(raft_core* c, size_t bytes) { c->message_entry_bytes = bytes; }

int raft_core_submit_barrier(raft_core* c, uint64_t now, uint64_t* index,
                             const struct raft_core_update** update) {
    return submit(c, now, RAFT_BARRIER, NULL, 0, index, update);
}

int raft_core_take_snapshot(raft_core* c, uint64_t now, uint64_t index, uint64_t term,
                            unsigned trailing, const struct raft_core_update** update) {
    struct raft* r = &c->raft;
    struct raft_event e;
    struct raft_update u;
    const struct raft_configuration* src;
    raft_index conf_index;
    struct raft_configuration copy;
    int rv;
    begin_call(c, update);
    if (!c->started || c->installing) {
        return fail(c, RAFT_CORE_INVALID, "not started, or installing a snapshot");
    }
    /* libraft asserts an entry at `index` and no snapshot there already. */
    if (index == 0 || term == 0 || index > raft_commit_index(r) || index > raft_last_index(r) ||
        index <= r->trail.snapshot.index) {
        return fail(c, RAFT_CORE_INVALID, "snapshot index not committed or not past the last one");
    }
    /* The configuration as of `index`: a change at or below it is committed
     * (index <= commit index) even if the application has not applied it. */
    if (r->configuration_uncommitted_index != 0 && r->configuration_uncommitted_index <= index) {
        src = &r->configuration;
        conf_index = r->configuration_uncommitted_index;
    } else {
        src = &r->configuration_committed;
        conf_index = r->configuration_committed_index;
    }
    if (conf_index == 0 || src->n == 0) {
        return fail(c, RAFT_CORE_INVALID, "no committed configuration");
    }
    event_init(&e, RAFT_SNAPSHOT, now);
    e.snapshot.metadata.index = index;
    e.snapshot.metadata.term = term;
    e.snapshot.metadata.configuration_index = conf_index;
    e.snapshot.trailing = trailing;
    if (conf_copy(src, &e.snapshot.metadata.configuration) != 0) {
        return fail(c, RAFT_CORE_NOMEM, "no memory");
    }
    if (conf_copy(src, &copy) != 0) {
        raft_configuration_close(&e.snapshot.metadata.configuration);
        return fail(c, RAFT_CORE_NOMEM, "no memory");
    }
    rv = step(c, &e, &u); /* the metadata's configuration is the raft's now */
    if (rv != 0) {
        raft_configuration_close(&copy);
        return rv;
    }
    raft_configuration_close(&c->snap_conf);
    c->snap_conf = copy;
    c->snap_index = index;
    c->snap_term = term;
    return RAFT_CORE_OK;
}

int raft_core_transfer(raft_core* c, uint64_t now, uint64_t to,
                       const struct raft_core_update** update) {
    struct raft_event e;
    struct raft_update u;
    begin_call(c, update);
    if (!c->started) {
        return fail(c, RAFT_CORE_INVALID, "not started");
    }
    event_init(&e, RAFT_TRANSFER, now);
    e.transfer.server_id = to;
    return step(c, &e, &u);
}

int raft_core_apply_change(raft_core* c, uint64_t now, uint64_t index, const void* data, size_t len,
                           const struct raft_core_update** update) {
    struct raft_event e;
    struct raft_update u;
    struct raft_buffer buf;
    begin_call(c, update);
    if (!c->started || index == 0 || index > raft_commit_index(&c->raft)) {
        return fail(c, RAFT_CORE_INVALID, "not started, or the change is not committed");
    }
    event_init(&e, RAFT_CONFIGURATION, now);
    e.configuration.index = index;
    buf.base = (void*)data;
    buf.len = len;
    if (raft_configuration_decode(&buf, &e.configuration.conf) != 0) {
        return fail(c, RAFT_CORE_MALFORMED, "configuration does not decode");
    }
    return step(c, &e, &u); /* the configuration is the raft's now */
}

int raft_core_state(const raft_core* c) { return (int)raft_state((struct raft*)&c->raft); }

uint64_t raft_core_id(const raft_core* c) { return c->id; }

uint64_t raft_core_leader(const raft_core* c) { return leader_of(c); }

uint64_t raft_core_term(const raft_core* c) { return raft_current_term(&c->raft); }

uint64_t raft_core_commit_index(const raft_core* c) { return raft_commit_index(&c->raft); }

uint64_t raft_core_last_index(const raft_core* c) {
    return raft_last_index((struct raft*)&c->raft);
}

uint64_t raft_core_next_timeout(const raft_core* c) { return raft_timeout(&c->raft); }

const char* raft_core_errmsg(const raft_core* c) { return c->errmsg; }

const char* raft_core_strerror(int error) {
    switch (error) {
        case RAFT_CORE_OK:
            return "ok";
        case RAFT_CORE_NOMEM:
            return "out of memory";
        case RAFT_CORE_NOTLEADER:
            return "not the leader";
        case RAFT_CORE_MALFORMED:
            return "malformed message";
        case RAFT_CORE_INVALID:
            return "invalid call";
        case RAFT_CORE_BADID:
            return "not a voter";
        case RAFT_CORE_NOTFOUND:
            return "not found";
        case RAFT_CORE_SHUTDOWN:
            return "log conflicts with committed entries";
        default:
            return "libraft error";
    }
}
