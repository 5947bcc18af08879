#pragma once
// One seed's run: N nodes × M groups on virtual time, the clients, and the
// faults. Faults (crashes and restarts, partitions, slow and failing disks,
// a lossy network or a transport's broken connections, one-way partitions and
// slow links, leadership transfers) come for run_ms; then everything
// heals, the clients finish their writes, and within settle_ms every group
// must have one leader that every replica follows and has caught up with.
// The final checks then compare every replica's state with each other and
// with what the clients saw acknowledged.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>

#include "checker.h"
#include "client.h"
#include "event_queue.h"
#include "inputs.h"
#include "network.h"
#include "node.h"
#include "options.h"
#include "trace.h"

namespace dstream::sim {

struct run_result {
    bool ok = false;
    std::string failure;  // "<check>: <detail>"
    std::uint64_t virtual_ms = 0;
    std::uint64_t messages = 0;
    network::counters net;
    std::uint64_t acknowledged = 0;
    std::uint64_t crashes = 0;
    std::uint64_t leaders = 0;
    std::uint64_t states_compared = 0;
    checker::counters counted;
};

class world final : public cluster_access {
public:
    world(std::uint64_t seed, bool verbose, bool trace_messages);
    ~world() override;

    run_result run();
    const sim_options& options() const { return _options; }

private:
    // cluster_access
    bool submit(std::uint64_t node, std::uint32_t group, state::command_body body,
                std::function<void(state::apply_result)> done) override;
    std::uint64_t leader_hint(std::uint64_t node, std::uint32_t group) override;

    sim_node& node(std::uint64_t id) { return *_nodes[id - 1]; }
    void deliver(std::uint64_t from, std::uint64_t to, std::uint32_t group, std::string_view bytes);
    // A message left `from`: maybe it crashes right after (crash_after_answer).
    void sent(std::uint64_t from, std::string_view bytes);
    // Whether one more node may go down (a minority at most, or any).
    bool may_crash() const;
    void fault_tick();
    // The transport mode's faults: resets, one-way partitions, slow links.
    void transport_faults();
    void crash(sim_node& n);
    void restart(std::uint64_t id, std::uint64_t incarnation);
    void heal();
    // Every group has a leader all replicas follow, and all have applied
    // everything it has; the clients are done.
    bool settled(std::string* why);
    void final_checks();
    void check_streams(sim_node& n, std::uint32_t group);
    // Runs one event, and whatever it posted to the groups' strands.
    void step();

    sim_random _rng;
    sim_options _options;
    event_queue _events;
    tracer _trace;
    checker _check;
    boost::asio::io_context _io;
    network _net;
    std::vector<std::unique_ptr<sim_node>> _nodes;
    std::vector<std::unique_ptr<client>> _clients;
    bool _healed = false;
    std::uint64_t _crashes = 0;
};

}  // namespace dstream::sim
