#pragma once
// One group on this node: its strand, state machine, command log, pending
// proposals and live readers. Every member function runs on the strand.
#include <utility>
#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <deque>
#include <memory>
#include <unordered_map>
#include <unordered_set>

#include "base/unique_function.h"
#include "log/command_log.h"
#include "runtime/wake_signal.h"
#include "service/stream_service.h"
#include "state/group_state.h"

namespace dstream::service {

using group_strand = boost::asio::strand<boost::asio::io_context::executor_type>;
using write_done = unique_function<void(state::apply_result)>;

class group {
public:
    explicit group(group_strand strand) : _strand(std::move(strand)), _sweep_timer(_strand) {}

    void attach_log(std::unique_ptr<log::command_log> log);
    const group_strand& strand() const { return _strand; }

    // Applies a recovered record (start-up, before any proposal).
    void replay(std::uint64_t index, std::string_view record);
    void start();
    void propose(state::command_body body, write_done done);
    stream_view read(const read_request& request);
    // Registers `signal` to fire when the stream changes; false when the
    // condition already holds and the reader must not wait.
    bool watch(const std::string& key, std::uint64_t incarnation, std::uint64_t offset,
               const std::shared_ptr<runtime::wake_signal>& signal);

private:
    struct pending_entry {
        std::uint64_t index = 0;
        state::command cmd;
        write_done done;
    };

    void append_to_log(state::command cmd, write_done done);
    void on_durable(std::uint64_t index, const status& st);
    void wake_readers(const std::string& key);
    // A stream whose lifetime ran out is absent to every request; its removal
    // is proposed once, as an expire_stream command.
    const state::stream* live_stream(const std::string& key, protocol::unix_ms now);
    bool lifetime_over(const std::string& key, const state::stream& s, protocol::unix_ms now) const;
    void schedule_sweep();

    group_strand _strand;
    std::unique_ptr<log::command_log> _log;
    state::group_state _state;
    std::deque<pending_entry> _pending;
    std::unordered_map<std::string, std::vector<std::weak_ptr<runtime::wake_signal>>> _watchers;
    // Leader-local, not replicated: the last read of each stream renews its
    // sliding TTL without a log entry per read.
    std::unordered_map<std::string, protocol::unix_ms> _last_read_ms;
    std::unordered_set<std::string> _expiring;
    boost::asio::steady_timer _sweep_timer;
};

}  // namespace dstream::service
