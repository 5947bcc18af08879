#pragma once
// The stream engine of one node: G groups, each a state machine fed by its
// own command log and run on its own strand. Streams hash to groups.
#include <atomic>
#include <functional>
#include <memory>
#include <unordered_set>
#include <utility>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>

#include "log/group_log.h"
#include "runtime/clock.h"
#include "runtime/io_threads.h"
#include "runtime/random.h"
#include "service/cold_tier.h"
#include "service/group.h"
#include "service/peer_requests.h"
#include "service/stream_service.h"

namespace dstream::service {

class snapshot_uploads;

// Makes the replicated log of group `index`, which runs on `strand`; null
// for a group of which this node holds no replica.
using log_factory =
    std::function<std::unique_ptr<log::group_log>(std::size_t index, const group_strand& strand)>;

// Start-up order: construct, restore() and replay() what recovery found,
// attach_logs(), start(); then serve.
class engine final : public stream_service {
public:
    // Group i runs on io.of(i), the thread that owns it.
    engine(const runtime::io_contexts& io, std::size_t group_count, const cold_tier& cold,
           const checkpointing& checkpoints, const runtime::clock& clock = runtime::system_clock(),
           runtime::random_source& random = runtime::system_random());
    ~engine() override;

    std::size_t group_count() const { return _groups.size(); }
    // Before start(), on one thread: a group's checkpoint (as of `index` of
    // `term`), then the commands recovery replays after it.
    void restore(std::size_t group, state::group_state state, std::uint64_t index,
                 std::uint64_t term);
    void replay(std::size_t group, std::uint64_t index, std::uint64_t term, std::string_view bytes);
    // The last index and its term a group applied at recovery.
    std::uint64_t applied_index(std::size_t group) const;
    std::uint64_t applied_term(std::size_t group) const;
    void attach_logs(const log_factory& make_log);
    // In a cluster with more nodes than `replicas`: where requests about a
    // group this node holds no replica of go (a fork's source).
    void set_peer_reads(peer_reads& peers) { _peer_reads = &peers; }
    // A peer's request about a group this node hosts, answered once its
    // replica caught up with the group's leader.
    boost::asio::awaitable<peer_answer> answer_peer(peer_request request);
    // Starts each group's log and timers.
    void start();
    // The cold objects the state references (for the orphan sweep at start).
    std::unordered_set<std::string> referenced_object_keys() const;
    // Removes staged snapshot parts past their grace (blocking; at start).
    void sweep_staged_parts();
    // Each group's log, for the metrics and the stop (on its strand).
    template <typename Visit>
    void for_each_log(Visit visit) {
        for (auto& g : _groups) visit(g->id(), g->strand(), *g->log());
    }

    // Operator work on one group (the admin listener's backups, restores and
    // accepted losses; engine_admin.cc). The group's state as of its applied
    // index, captured by its leader with its objects held (`hold`).
    boost::asio::awaitable<group_capture> capture_group(std::uint32_t group,
                                                        const hold_objects_fn& hold);
    // Proposes a group command (a restore, a rewrite) to the group's leader on
    // this node and answers with its apply; NO_LEADER when it leads elsewhere.
    boost::asio::awaitable<state::apply_result> propose_to_group(std::uint32_t group,
                                                                 state::command_body& body);
    placement group_placement(std::uint32_t group) const { return _groups.at(group)->where(); }

    boost::asio::awaitable<state::apply_result> write(state::command_body& body) override;
    boost::asio::awaitable<state::apply_result> create_fork(state::create_stream& create,
                                                            const fork_request& fork) override;
    boost::asio::awaitable<stream_view> read(const read_request& request) override;
    placement place(std::string_view key) const override;
    boost::asio::awaitable<std::optional<state::apply_result>> answer_before_body(
        const state::append& headers) override;
    boost::asio::awaitable<snapshot_view> read_snapshot(const std::string& key,
                                                        std::uint64_t offset, std::uint64_t first,
                                                        std::uint64_t length) override;
    boost::asio::awaitable<bootstrap_view> bootstrap(const std::string& key,
                                                     std::uint64_t max_update_bytes) override;
    std::optional<std::uint64_t> max_snapshot_bytes() const override;
    boost::asio::awaitable<part_admission> admit_part(
        const std::string& key, const std::optional<std::uint64_t>& if_incarnation,
        std::uint64_t declared_bytes) override;
    boost::asio::awaitable<parts_answer> stage_part(
        const std::string& key, const std::optional<std::uint64_t>& if_incarnation,
        std::string& body, std::unique_ptr<part_upload>& upload) override;
    boost::asio::awaitable<parts_answer> discard_parts(
        const std::string& key, const std::optional<std::uint64_t>& if_incarnation) override;
    boost::asio::awaitable<state::apply_result> commit_parts(const parts_commit& commit) override;
    boost::asio::awaitable<std::shared_ptr<const live_update>> wait(
        const read_request& request, std::chrono::steady_clock::time_point deadline) override;
    std::shared_ptr<live_subscription> follow(
        const read_request& request, const boost::asio::any_io_executor& reader,
        std::chrono::steady_clock::time_point deadline) override;
    void end_live_reads() override;
    bool live_reads_ended() const override { return _live_reads_ended.load(); }

private:
    group& group_for(std::string_view key);
    const group& group_for(std::string_view key) const;
    // extensions 9.2: whether `g`'s replica here applied what its leader had
    // committed when asked (group_log::catch_up).
    boost::asio::awaitable<bool> catch_up(group& g);
    // extensions 2.2 note: reads the byte before a snapshot or retention
    // offset (from the cold tier if need be) into the command, so that apply
    // can judge a JSON boundary it no longer holds in memory.
    boost::asio::awaitable<void> read_boundary(state::command_body& body);
    // A command one group sends another (a fork's reference on its source):
    // proposed by the receiving group's leader, on this node or another one
    // (group_leader::submit_via_leader), without waiting for the answer.
    void forward(state::command_body body);
    // Proposes `body` to its group; the awaitable gives the answer. A plain
    // function: an append's wait costs no coroutine frame of its own. With
    // `via_leader`, as forward() does, and waiting for the answer.
    boost::asio::awaitable<state::apply_result> propose(state::command_body& body,
                                                        bool via_leader = false);
    // write() for a publish or a retention (which first read a boundary) and
    // a delete (which removes staged parts after its answer).
    boost::asio::awaitable<state::apply_result> write_with_follow_up(state::command_body& body);
    // One group's read, its cold pieces loaded; `as_source_of` as in group::read.
    boost::asio::awaitable<read_plan> read_group(const read_request& request,
                                                 std::optional<std::uint64_t> as_source_of);
    // A read with a fork's inherited bytes read from its source, recursively.
    boost::asio::awaitable<stream_view> read_stitched(const read_request& request,
                                                      std::optional<std::uint64_t> as_source_of);
    boost::asio::awaitable<result<fork_source_view>> fork_source(const std::string& key);
    // The source's view as current as its leader's: from this node's replica
    // once caught up, or from a peer's when this node holds none.
    boost::asio::awaitable<result<fork_source_view>> current_source(const std::string& key);
    // A request to a replica on another node (peer_reads), as an awaitable.
    boost::asio::awaitable<peer_answer> ask_peer(peer_request request);
    // read_stitched() of a source whose group this node holds no replica of.
    boost::asio::awaitable<stream_view> read_from_peer(const read_request& request,
                                                       std::uint64_t incarnation);
    // The fork point `sub_offset` messages (JSON) or bytes past `offset`.
    boost::asio::awaitable<result<std::uint64_t>> resolve_sub_offset(
        const fork_request& fork, const fork_source_view& source);
    // Every fork reference whose fork does not exist (a crash between the
    // reference and the fork's creation or removal): their drops, proposed
    // at start.
    std::vector<state::drop_fork_ref> dangling_fork_references();

    // The stream a parts request addresses, as of now: 404 and 412 refusals,
    // its incarnation and latest snapshot.
    boost::asio::awaitable<stream_view> parts_target(
        const std::string& key, const std::optional<std::uint64_t>& if_incarnation);
    // A commit's answer from its stream (404, 412) or latest snapshot (a
    // repeat, a 409), dropping the parts a final one uses up; nothing when
    // the parts decide.
    std::optional<state::apply_result> answer_before_copy(const parts_commit& commit,
                                                          const stream_view& target);

    runtime::random_source& _random;
    runtime::fanout_lanes _lanes;  // before the groups, which use them
    std::vector<std::unique_ptr<group>> _groups;
    std::atomic<bool> _live_reads_ended{false};
    std::unique_ptr<snapshot_uploads> _uploads;  // null without a cold store
    peer_reads* _peer_reads = nullptr;           // a cluster's, when it has unhosted groups
};

}  // namespace dstream::service
