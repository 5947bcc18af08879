#pragma once
// A simulated client of one stream. It creates the stream, then writes to it
// one write at a time, to the node it believes leads the stream's group; on
// a refusal (that node does not lead) it follows the node's hint, on a
// timeout it tries another node, and in both cases it sends the very same
// write again. A producer client writes with an idempotent producer
// (Producer-Id, epoch, seq), so that a repeat is answered as one instead of
// appending twice; a closer is a producer that closes its stream with its
// last write; a plain client appends without one (a retry may append twice).
//
// A write counts as acknowledged only once an apply answered it: its range
// in the stream is what the answer says.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "checker.h"
#include "event_queue.h"
#include "inputs.h"
#include "options.h"
#include "state/apply_result.h"
#include "state/command.h"
#include "trace.h"

namespace dstream::sim {

enum class client_kind { producer, closer, plain };

// The cluster as a client sees it.
class cluster_access {
public:
    virtual ~cluster_access() = default;
    // Hands a write to a node; false when the node is down (no connection).
    virtual bool submit(std::uint64_t node, std::uint32_t group, state::command_body body,
                        std::function<void(state::apply_result)> done) = 0;
    // The leader the node knows of; 0: none (or the node is down).
    virtual std::uint64_t leader_hint(std::uint64_t node, std::uint32_t group) = 0;
};

class client {
public:
    struct write {
        std::string body;
        bool close = false;
        std::uint64_t seq = 0;
        unsigned attempts = 0;
        // Each answer that acknowledged it: its range in the stream.
        std::vector<std::pair<std::uint64_t, std::uint64_t>> acks;
    };

    client(std::uint64_t id, client_kind kind, std::uint32_t group, std::string stream,
           event_queue& events, sim_random& rng, const sim_options& options, checker& check,
           const tracer& trace, cluster_access& cluster);

    void start();
    // No new writes after the current one (a closer's last write closes).
    void finish();
    bool done() const { return _done; }

    std::uint64_t id() const { return _id; }
    client_kind kind() const { return _kind; }
    std::uint32_t group() const { return _group; }
    const std::string& stream() const { return _stream; }
    const std::vector<write>& writes() const { return _writes; }
    std::string producer_id() const { return "c" + std::to_string(_id); }
    // The body of a record of this client: "<tag>.<n>\n".
    std::string tag() const;
    std::string describe() const;

private:
    void send();
    void answered(std::uint64_t attempt, std::size_t write_index, const state::apply_result& r);
    void retry(std::uint64_t backoff_ms, std::uint64_t hint_from);
    void next();
    state::command_body body_of(const write& w) const;
    std::uint64_t random_node() { return _rng.between(1, _options.nodes); }

    std::uint64_t _id;
    client_kind _kind;
    std::uint32_t _group;
    std::string _stream;
    event_queue& _events;
    sim_random& _rng;
    const sim_options& _options;
    checker& _check;
    const tracer& _trace;
    cluster_access& _cluster;

    bool _created = false;
    bool _finishing = false;
    bool _done = false;
    std::uint64_t _target = 1;
    std::uint64_t _attempt = 0;  // the attempt waited for; older answers still count
    std::vector<write> _writes;  // the last one is in flight until acknowledged
};

}  // namespace dstream::sim
