#pragma once
// One group on this node: its strand, state machine, command log, pending
// proposals, live readers and cold-tier flushes. Every member function runs
// on the strand.
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "base/reusable_queue.h"
#include "base/unique_function.h"
#include "log/command_log.h"
#include "runtime/compact_strand.h"
#include "runtime/fanout_lanes.h"
#include "service/cold_tier.h"
#include "service/live_readers.h"
#include "service/live_update.h"
#include "service/stream_service.h"
#include "state/group_state.h"

namespace dstream::service {

// Compact: a group's executor is copied into every log notification and
// timer as an any_io_executor (runtime/compact_strand.h).
using group_strand = runtime::compact_strand;
using write_done = unique_function<void(state::apply_result)>;

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

// A source's reference to a fork, and the command that would drop it.
struct fork_reference {
    std::string fork_key;
    state::drop_fork_ref drop;
};

// Hands a command to the group its key hashes to (the engine routes it).
using command_forwarder = std::function<void(state::command_body)>;

struct service_metrics;

class group final : private live_source {
public:
    group(std::uint32_t id, group_strand strand, cold_tier cold, checkpointing checkpoints,
          runtime::fanout_lanes& lanes);

    void attach_log(std::unique_ptr<log::command_log> log);
    // Where commands for other groups go (a fork's release of its source).
    void set_forwarder(command_forwarder forward) { _forward = std::move(forward); }
    const group_strand& strand() const { return _strand; }
    const cold_tier& cold() const { return _cold; }

    // Start-up, before any proposal: the state of a checkpoint, then every
    // recovered record after it.
    void restore(state::group_state state, std::uint64_t index);
    // False when the checkpoint holds the record already.
    bool replay(std::uint64_t index, std::string_view record);
    std::uint64_t checkpoint_index() const { return _checkpoint_index; }
    void release_log() { _log->release(_checkpoint_index); }
    void start();
    // Any thread: propose()s `body` on the group's strand. Proposals queued
    // while a post for them is pending share it, so a busy group takes one
    // post per burst, not one per write.
    void submit(state::command_body body, write_done done);
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
    // Fires `signal` when the stream `request` reads changes from its
    // position (at once when it already has), with that read when it can be
    // shared (see stream_service::wait).
    void watch(const read_request& request, const std::shared_ptr<live_signal>& signal);
    // Offers `subscription` every change of the stream `request` reads from
    // its position on, until the reader leaves, falls behind or must read
    // for itself (live_subscription.h).
    void follow(read_request request, const std::shared_ptr<live_subscription>& subscription);
    // Shutdown: wakes every live reader, and later watches fail so that
    // their readers answer at once.
    void stop_watches();
    // The cold objects (chunks, snapshot bodies) every stream references.
    void collect_object_keys(std::unordered_set<std::string>& out) const;
    // Every fork reference held by this group's streams, for the start-up
    // check that each names a fork that still exists.
    std::vector<fork_reference> fork_references() const;
    // Whether the fork a reference names exists here (live or retired) and
    // holds that reference.
    bool holds_fork(const fork_reference& held) const;

private:
    // On the strand: stamps, logs and (once durable) applies `body`.
    void propose(state::command_body body, write_done done);
    struct pending_entry {
        std::uint64_t index = 0;
        state::command cmd;
        write_done done;
    };

    void append_to_log(state::command cmd, write_done done);
    void on_durable(std::uint64_t index, const status& st);
    // Applies one command and keeps the group's own bookkeeping (hot bytes,
    // readers, flushes, garbage chunks) in step with the state.
    state::apply_result apply_and_follow(const state::command& cmd, std::uint64_t index);
    // The read `request` makes, when it reaches the tail from hot bytes
    // alone and so can be handed to every reader making the same one.
    std::shared_ptr<const live_update> live_answer(const read_request& request) override;
    // Whether the stream `request` reads already has something for it (bytes
    // past its position, a close, a refusal), so its reader must not wait.
    bool has_news(const read_request& request);
    // The refusal for a request on a stream that is not live (404, or 410
    // when it is retired for its forks).
    error missing(const std::string& key) const;
    // A stream whose lifetime ran out is absent to every request; its removal
    // is proposed once, as an expire_stream command.
    const state::stream* live_stream(const std::string& key, protocol::unix_ms now);
    bool lifetime_over(const std::string& key, const state::stream& s, protocol::unix_ms now) const;
    void schedule_sweep();

    void maybe_flush(const std::string& key, const state::stream& s);
    void relieve_memory_pressure();
    struct flush_chunk_job {
        std::string key;
        std::uint64_t incarnation = 0;
        std::uint64_t start = 0;
        std::uint64_t end = 0;
        std::string object_key;
        std::vector<storage::byte_slice> slices;
    };
    void start_flush(const std::string& key, const state::stream& s, std::uint64_t end);
    void finish_flush(flush_chunk_job job, const status& written);

    void maybe_checkpoint(bool idle);
    // Moves the node-wide totals by this group's changes.
    void report(std::int64_t streams_delta, std::int64_t hot_bytes_delta);

    std::uint32_t _id;
    group_strand _strand;
    cold_tier _cold;
    checkpointing _checkpoints;
    std::uint64_t _applied_index = 0;
    std::uint64_t _checkpoint_index = 0;
    std::uint64_t _logged_since_checkpoint = 0;
    bool _checkpointing = false;
    std::unique_ptr<log::command_log> _log;
    state::group_state _state;
    reusable_queue<pending_entry> _pending;
    live_readers _live;
    // The streams a batch of applied entries changed, woken once it is answered.
    std::vector<std::string> _changed;
    // Leader-local, not replicated: the last read of each stream renews its
    // sliding TTL without a log entry per read.
    std::unordered_map<std::string, protocol::unix_ms> _last_read_ms;
    std::unordered_set<std::string> _expiring;
    // Streams with a chunk flush in flight (at most one each).
    std::unordered_set<std::string> _flushing;
    std::uint64_t _hot_bytes = 0;  // bytes above the cold frontier, all streams
    boost::asio::steady_timer _sweep_timer;
    command_forwarder _forward;
    service_metrics& _metrics;

    struct submission {
        state::command_body body;
        write_done done;
    };
    void propose_submitted();
    std::mutex _submitted_mutex;
    std::vector<submission> _submitted;  // under _submitted_mutex
    bool _submitted_posted = false;      // under _submitted_mutex
    std::vector<submission> _proposing;  // the strand's; keeps its capacity
};

}  // namespace dstream::service
