#pragma once
// The stream engine of one node: G groups, each a state machine fed by its
// own command log and run on its own strand. Streams hash to groups.
#include <utility>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <memory>
#include <vector>

#include <unordered_set>

#include "log/command_log.h"
#include "service/cold_tier.h"
#include "service/stream_service.h"

namespace dstream::service {

class group;
class snapshot_uploads;

// Makes the command log of group `index` on its strand.
using log_factory = std::function<std::unique_ptr<log::command_log>(
    std::size_t index, boost::asio::any_io_executor strand)>;

// Start-up order: construct, replay() every recovered record, attach_logs(),
// start(); then serve.
class engine final : public stream_service {
public:
    engine(boost::asio::io_context& io, std::size_t group_count, const cold_tier& cold,
           const checkpointing& checkpoints);
    ~engine() override;

    std::size_t group_count() const { return _groups.size(); }
    // Loads each group's newest checkpoint (before replay; throws on damage).
    void restore_checkpoints(const log::checkpoint_files& files);
    // Applies a recovered log record to its group (before start(), one thread).
    void replay(std::size_t group, std::uint64_t index, std::string_view record);
    // The index the group's loaded checkpoint covers (0: none).
    std::uint64_t checkpoint_index(std::size_t group) const;
    // Lets each group's log drop what its checkpoint covers.
    void release_checkpointed();
    void attach_logs(const log_factory& make_log);
    // Draws each new group's history id and starts its timers.
    void start();
    // The cold objects the state references (for the orphan sweep at start).
    std::unordered_set<std::string> referenced_object_keys() const;
    // Removes staged snapshot parts past their grace (blocking; at start).
    void sweep_staged_parts();

    boost::asio::awaitable<state::apply_result> write(state::command_body& body) override;
    boost::asio::awaitable<stream_view> read(const read_request& request) override;
    boost::asio::awaitable<std::optional<state::apply_result>> answer_before_body(
        const state::append& headers) override;
    boost::asio::awaitable<snapshot_view> read_snapshot(const std::string& key, std::uint64_t offset,
                                                        std::uint64_t first,
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
    boost::asio::awaitable<void> wait(const std::string& key, std::uint64_t incarnation,
                                      std::uint64_t offset,
                                      std::chrono::steady_clock::time_point deadline) override;

private:
    group& group_for(std::string_view key);
    // The stream a parts request addresses, as of now: 404 and 412 refusals,
    // its incarnation and latest snapshot.
    boost::asio::awaitable<stream_view> parts_target(
        const std::string& key, const std::optional<std::uint64_t>& if_incarnation);

    std::vector<std::unique_ptr<group>> _groups;
    std::unique_ptr<snapshot_uploads> _uploads;  // null without a cold store
};

}  // namespace dstream::service
