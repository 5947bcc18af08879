#pragma once
// The node's write-ahead log: one sequence of segment files shared by every
// group on the node, so that one fdatasync covers the writes of all groups
// and connections that arrived since the last one started (group commit).
//
// Threads: submit() from any group strand; a few WAL threads do the rest.
// An idle one wakes for queued records, takes the whole queue, writes it and
// runs an fdatasync covering every byte written before it began, so up to
// sync_threads flushes are in flight, each started at least flush_stagger
// after the one before unless that one has finished. The filesystem and the
// device merge concurrent flushes, so a record waits about one flush instead
// of the rest of the running one plus its own. Where few flushes run past the
// stagger, records queued behind a flush wait for its thread, which takes
// them once done, unless that flush has run past the stagger; so a fast disk
// has one WAL thread busy at a time. The thread that writes a batch flushes it:
// a batch costs one thread wake, not one to write it and one to flush it.
// Writes hold a mutex, so the log keeps queue order; flushes overlap.
// Results go back through wal_sink::on_written, in log order, on a WAL thread.
#include <array>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/file_io.h"
#include "base/result.h"
#include "log/wal_format.h"

namespace dstream::log {

struct wal_metrics;

// Receives the outcome of submitted records, in submission order per sink.
class wal_sink {
public:
    virtual ~wal_sink() = default;
    // Every record of this sink up to the one submitted with `token` is
    // durable; or, with an error, that record's batch failed (and so does
    // every batch after it until the log is cut back).
    virtual void on_written(std::uint64_t token, const status& st) = 0;
};

// Start-up refuses a log it cannot trust; the message names file and offset.
class wal_corruption : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

struct wal_options {
    std::filesystem::path dir;
    std::uint64_t segment_bytes = 32u << 20;
    // fdatasyncs in flight at most; 1 gives one flush after another.
    unsigned sync_threads = 4;
    // A further flush starts only once the newest one in flight has run this
    // long. On a disk whose flushes are fast, one flush at a time covers more
    // writes each (less CPU per record); on a slow one, flushes still overlap.
    std::chrono::microseconds flush_stagger{1000};
    // Prepares each next segment ahead, on a thread of its own: a file of
    // segment_bytes, zero past the magic and flushed, renamed into place at
    // the switch. A flush then overwrites allocated blocks instead of growing
    // the file, which also costs an inode write (one device write more).
    bool preallocate = false;
};

struct wal_recovery {
    std::uint64_t records = 0;
    std::uint64_t bytes = 0;
    std::size_t segments = 0;
    bool torn_tail_cut = false;
};

class node_wal {
public:
    explicit node_wal(wal_options options, file_io& io = posix_file_io());
    ~node_wal();
    node_wal(const node_wal&) = delete;
    node_wal& operator=(const node_wal&) = delete;

    // Visits every record in log order; cuts a torn tail; throws
    // wal_corruption on any other damage. Call once, before start(). In
    // segments of commands a group's indexes increase; a Raft log's may go
    // back (a conflicting suffix), which its reader judges.
    using record_visitor = std::function<void(std::uint32_t group, std::uint64_t index,
                                              std::string_view payload, wal_payloads kind)>;
    wal_recovery recover(const record_visitor& visit);

    // Opens the newest segment to append after its records, or begins a new
    // one (none yet, or the newest is of an older format). Throws when
    // segments exist that recover() has not read.
    void start();
    // Flushes what was submitted and joins the WAL threads.
    void stop();

    // `token` increases per sink: what on_written() names.
    void submit(std::uint32_t group, std::uint64_t index, wal_payload payload, wal_sink* sink,
                std::uint64_t token);
    // As submit(), in the same queue, but no WAL thread wakes for it (one
    // already awake takes it with the rest of the queue): the
    // submitter calls wake() once it queued the rest of its burst (every
    // record its I/O thread makes before that thread turns to the next
    // handler it has queued), so that a burst costs one wake and goes in one
    // batch and one flush, not in one for its first record and another for
    // the rest.
    void submit_quietly(std::uint32_t group, std::uint64_t index, wal_payload payload,
                        wal_sink* sink, std::uint64_t token);
    // Wakes a WAL thread for what is queued; any thread.
    void wake();

    // Group `group` has a checkpoint covering its entries up to `index`:
    // segments whose every entry is covered are deleted (never the open one).
    void release(std::uint32_t group, std::uint64_t index);

private:
    struct entry {
        std::array<char, 20> header;  // computed by the submitter, outside the write mutex
        std::uint32_t group;
        std::uint64_t index;
        wal_payload payload;
        wal_sink* sink;
        std::uint64_t token;
    };

    // A batch written to the open segment, waiting for a flush that began
    // after it: one notice per sink (its last token in the batch).
    struct written_batch {
        std::vector<std::pair<wal_sink*, std::uint64_t>> notices;
        std::uint64_t end = 0;         // the log position after the batch
        std::uint64_t records = 0;     // written to the log
        status outcome = ok_status();  // a failed write is answered in its turn
    };

    // What a thread owes once its batch is written: a flush up to `target`
    // through its own descriptor.
    struct flush_due {
        int fd;
        std::uint64_t target;
    };

    // What a record found as it was queued.
    struct queue_state {
        bool was_empty = false;
        bool none_busy = false;  // every WAL thread asleep or not yet looking
    };
    // Wakes a WAL thread for queued records where none would take them, or
    // where a flush beside the one in flight is due.
    void wake_for_queue(queue_state state);
    void commit_loop(std::size_t slot);
    // Waits while the newest flush in flight is younger than flush_stagger:
    // the records queued meanwhile go to the thread that runs it, once done.
    void wait_for_flush_turn();
    // Takes the queue and writes it in log order; the flush to run, if any.
    std::optional<flush_due> write_queued(std::vector<entry>& batch, std::size_t slot);
    void flush(flush_due due);
    // Replaces the threads' flush descriptors with new ones on `path`; 0 or an errno.
    int reopen_sync_descriptors(const std::filesystem::path& path);
    // Queues a record.
    queue_state enqueue(std::uint32_t group, std::uint64_t index, wal_payload payload,
                        wal_sink* sink, std::uint64_t token);
    // Writes a watermark, then the records, after the open segment's records.
    status write_batch(const std::vector<entry>& batch);
    // Answers, in log order, every batch whose bytes a finished flush covers.
    void deliver_durable();
    // Waits until every written byte is flushed (or a flush failed).
    void wait_all_durable();
    // After a failed flush: cuts the log back to what is durable and fails
    // every batch after it, so no later batch follows unflushed bytes. With
    // the write mutex held.
    void recover_from_failed_sync();
    // Switches writes to a new segment, or to the one found at start, whose
    // records end at `records_end`; returns 0, or the errno that kept the
    // segment from being made whole, in which case writes stay on the
    // segment they had.
    int open_segment(std::uint64_t first_sequence, std::optional<std::uint64_t> records_end);
    // Makes `path` a new segment from the prepared one, if one is ready.
    bool take_prepared_segment(const std::filesystem::path& path);
    // Closes the segment a switch left, whose records are all flushed, once
    // its pages are out of the page cache (by the preparer, off the switch).
    void retire_segment(int fd);
    void prepare_loop();
    // Writes and flushes the next segment under its temporary name.
    bool prepare_segment();
    std::filesystem::path segment_path(std::uint64_t first_sequence) const;
    std::filesystem::path prepared_path() const;
    // The open segment's file now has `size` bytes.
    void note_file_size(std::uint64_t size);

    // Per closed or open segment (by first sequence): each group's highest index in it.
    using coverage = std::map<std::uint32_t, std::uint64_t>;
    void note_written(std::uint64_t segment, std::uint32_t group, std::uint64_t index);
    void delete_covered_segments();

    wal_options _options;
    file_io& _io;
    wal_metrics& _metrics;
    std::mutex _segments_mutex;
    std::map<std::uint64_t, coverage> _segments;
    std::map<std::uint32_t, std::uint64_t> _released;
    std::uint64_t _open_segment = 0;
    // Held from taking the queue to counting the flush in flight: batches go
    // to the log in queue order, and no flush starts on a segment being cut
    // back or closed.
    std::mutex _write_mutex;
    int _fd = -1;
    std::uint64_t _segment_size = 0;  // where the next record goes
    std::uint64_t _file_size = 0;     // more than _segment_size in a prepared segment
    bool _recovered = false;
    std::uint64_t _recovered_end = 0;  // where the records of the newest segment end
    bool _newest_is_current = true;    // the newest segment found is of wal_magic
    std::uint64_t _next_sequence = 1;  // records written since the log began

    std::mutex _mutex;
    std::condition_variable _wake;
    std::vector<entry> _queue;
    // WAL threads awake: each looks at the queue before it sleeps. Counted
    // as busy from their start until their first look.
    unsigned _busy = 0;
    // Records queued wait for a flush's thread, none woken for them: a hint
    // that a further record should see whether that flush ran past its turn.
    std::atomic<bool> _queue_left_to_flush{false};
    bool _stopping = false;

    // Log positions count bytes written by this process; a write moves
    // _written, a flush _durable once it returns.
    std::mutex _sync_mutex;
    std::condition_variable _synced;  // a segment switch or a recovery: a flush finished
    std::deque<written_batch> _written;
    std::uint64_t _written_pos = 0;
    std::uint64_t _durable_pos = 0;
    unsigned _syncs_in_flight = 0;
    unsigned _waiting_turn = 0;  // threads in wait_for_flush_turn()'s wait
    std::chrono::steady_clock::time_point _newest_flush_start;
    // The share of recent flushes that ran past the stagger (a moving
    // average); all of them until flushes are measured.
    double _flushes_past_turn = 1.0;
    // Notified only by stop(): a flush that ends leaves the queue to its own thread.
    std::condition_variable _stagger_wait;
    bool _flush_turns_over = false;  // stopping: no more waiting for a turn
    // Each thread flushes through a descriptor of its own on the open
    // segment, opened before anything is written there (a new segment, a cut
    // after a failed flush) and replaced only while no flush is in flight.
    // Linux reports a writeback error once per open file: through a shared
    // descriptor, a failed flush could let a concurrent one return success
    // for the very pages it lost, and a descriptor opened after the error
    // would not hear of it.
    std::vector<int> _sync_fds;
    int _sync_failure = 0;  // errno of a failed flush, until the log is cut back
    std::vector<std::thread> _threads;
    std::mutex _deliver_mutex;  // one deliverer at a time keeps log order

    // The next segment (wal_options::preallocate): ready once its file is
    // whole and flushed; taken while a switch renames it.
    std::mutex _prepared_mutex;
    std::condition_variable _prepared_wake;
    bool _prepared_ready = false;
    bool _prepared_taken = false;
    bool _preparing_over = false;
    bool _preparing_failed = false;  // the last try failed (warned once per streak)
    std::vector<int> _retired;       // segments for the preparer to drop and close
    std::thread _preparer;
};

}  // namespace dstream::log
