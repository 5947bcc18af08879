#pragma once
// Snapshot uploads in parts with a cold store (extensions 2.2, Upload in
// Parts, and its notes): parts staged as objects, discards, commits that copy
// the parts into one snapshot object and publish it, and the sweep of parts
// no publish used. The engine checks the stream first (404, 412 and, for a
// commit, its latest snapshot); this module does the rest. Store calls run on the cold tier's I/O
// pool, a copy one piece per task so other cold-tier work runs between its pieces.
// A commit takes its stream's run before the engine's last check of the
// latest snapshot: a commit that published meanwhile did so before its run
// ended, so a repeat is answered from the key, never copied again.
#include <chrono>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <boost/asio/any_io_executor.hpp>
#include <boost/asio/steady_timer.hpp>

#include "base/unique_function.h"
#include "protocol/expiry.h"
#include "runtime/clock.h"
#include "runtime/random.h"
#include "service/cold_tier.h"
#include "service/staging_ledger.h"
#include "service/stream_service.h"

namespace dstream::service {

// Ursula-Max-Snapshot-Bytes: the largest snapshot assembled from parts.
inline constexpr std::uint64_t max_assembled_snapshot_bytes = std::uint64_t{1} << 30;
// Commits a node copies at once; another answers 503 SNAPSHOT_COMMITS_BUSY.
inline constexpr std::size_t max_concurrent_copies = 2;

template <typename T>
using done_fn = unique_function<void(T)>;
// Proposes a publish on its stream's group; `done` gets the apply's answer.
using publish_fn = std::function<void(state::publish_snapshot, done_fn<state::apply_result>)>;

// 503 SNAPSHOT_COMMIT_IN_PROGRESS: another commit or discard of the stream runs.
error commit_in_progress();

class snapshot_uploads {
public:
    // A stream's one running commit or discard; it ends when this is
    // destroyed or end() is called.
    class run {
    public:
        run(run&& other) noexcept
            : _owner(std::exchange(other._owner, nullptr)), _key(std::move(other._key)) {}
        run& operator=(run&&) = delete;
        run(const run&) = delete;
        run& operator=(const run&) = delete;
        ~run() { end(); }
        void end();

    private:
        friend class snapshot_uploads;
        run(snapshot_uploads& owner, std::string key) : _owner(&owner), _key(std::move(key)) {}

        snapshot_uploads* _owner;
        std::string _key;
    };

    // `timers` runs the periodic sweep's timer; `grace` is how old an unused
    // part must be before the sweep removes it. A part's id holds its staging
    // time and random digits (`clock`, `random`).
    snapshot_uploads(boost::asio::any_io_executor timers, const cold_tier& cold,
                     std::chrono::seconds grace, publish_fn publish,
                     const runtime::clock& clock, runtime::random_source& random);

    void start();

    // Each answers through `done`, on the I/O pool or a group's strand.
    void admit(const std::string& key, std::uint64_t incarnation, std::uint64_t declared_bytes,
               done_fn<part_admission> done);
    void stage(const std::string& key, std::uint64_t incarnation, std::string body,
               std::unique_ptr<part_upload> upload, done_fn<parts_answer> done);
    void discard(const std::string& key, std::uint64_t incarnation, done_fn<parts_answer> done);
    // Nothing while another commit or discard of the stream runs.
    std::optional<run> begin_run(const std::string& key);
    // From the 503 SNAPSHOT_COMMITS_BUSY on: the checks against the stream are the engine's.
    void commit(run running, const parts_commit& request, std::uint64_t incarnation,
                done_fn<state::apply_result> done);
    // Removes the parts a commit used up (a final answer), then recounts the
    // stream's parts, as after every commit.
    void drop_parts(const std::string& key, std::uint64_t incarnation,
                    const std::vector<std::string>& part_ids);
    // After a delete of the stream: its parts of the incarnations this node
    // knew, at any age, and its other parts staged over a minute before.
    void stream_deleted(const std::string& key, std::uint64_t incarnation);
    // Removes the parts staged longer ago than the grace (blocking); start()
    // repeats it every grace, at most an hour apart.
    void sweep();

private:
    struct copy_job;
    using doomed_fn = std::function<bool(const part_object_name&)>;
    // What a delete of a stream removes: the parts of these incarnations,
    // and the others staged over a minute before `at`.
    struct deleted_parts {
        std::vector<std::uint64_t> incarnations;
        protocol::unix_ms at = 0;
    };

    // Lists the stream's parts, removes those `doomed` picks, and gives the
    // ledger what is left. Blocking; fails when the listing or a removal did.
    status relist(const std::string& key, const doomed_fn& doomed);
    void remove_parts(const std::string& key, std::uint64_t incarnation,
                      const std::vector<std::string>& part_ids);
    void remove_deleted(const std::string& key, deleted_parts deleted);

    void resolve(const std::shared_ptr<copy_job>& job);
    void copy_piece(const std::shared_ptr<copy_job>& job);
    void finish_copy(const std::shared_ptr<copy_job>& job);
    void fail_copy(const std::shared_ptr<copy_job>& job, error e);
    void settle(const std::shared_ptr<copy_job>& job, state::apply_result answer, bool parts_used);

    // One commit or discard per stream at a time, and a bounded number of
    // copies. A delete of the stream while one runs removes its parts after.
    void end_run(const std::string& key);
    bool try_copy();
    void end_copy();

    void schedule_sweep();

    cold_tier _cold;
    std::chrono::seconds _grace;
    publish_fn _publish;
    const runtime::clock& _clock;
    runtime::random_source& _random;
    std::shared_ptr<staging_ledger> _ledger = std::make_shared<staging_ledger>();
    std::mutex _mutex;
    std::unordered_map<std::string, std::optional<deleted_parts>> _running;  // by stream key
    std::size_t _copies = 0;
    boost::asio::steady_timer _sweep_timer;
};

}  // namespace dstream::service
