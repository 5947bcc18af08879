#include "options.h"

#include <sstream>

namespace dstream::sim {

sim_options sim_options::draw(std::uint64_t seed, sim_random& rng) {
    sim_options o;
    o.seed = seed;
    o.nodes = rng.chance(0.6) ? 3 : 5;
    o.groups = static_cast<unsigned>(rng.between(1, 4));
    o.clients_per_group = static_cast<unsigned>(rng.between(2, 4));

    o.election_ms = static_cast<unsigned>(rng.between(150, 500));
    o.heartbeat_ms = static_cast<unsigned>(rng.between(o.election_ms / 10, o.election_ms / 4));
    o.trailing = static_cast<unsigned>(rng.chance(0.3) ? 0 : rng.between(1, 24));
    o.checkpoint_every = static_cast<unsigned>(rng.between(3, 40));
    o.digest_every = static_cast<unsigned>(rng.between(1, 4));
    o.pre_vote = rng.chance(0.8);

    o.latency_min_ms = static_cast<unsigned>(rng.between(0, 3));
    o.latency_max_ms = o.latency_min_ms + static_cast<unsigned>(rng.between(1, 30));
    o.spike = rng.uniform(0, 0.03);
    o.spike_ms = static_cast<unsigned>(rng.between(50, 1500));
    o.drop = rng.chance(0.2) ? 0 : rng.uniform(0, 0.15);
    o.duplicate = rng.uniform(0, 0.05);

    o.fsync_min_ms = static_cast<unsigned>(rng.between(0, 2));
    o.fsync_max_ms = o.fsync_min_ms + static_cast<unsigned>(rng.between(0, 10));
    o.slow_fsync = rng.uniform(0, 0.05);
    o.slow_ms = static_cast<unsigned>(rng.between(50, 1500));
    o.failed_fsync = rng.chance(0.5) ? 0 : rng.uniform(0, 0.03);
    o.segment_records = static_cast<unsigned>(rng.between(2, 24));
    o.checkpoint_min_ms = static_cast<unsigned>(rng.between(0, 5));
    o.checkpoint_max_ms = o.checkpoint_min_ms + static_cast<unsigned>(rng.between(0, 400));
    o.failed_checkpoint = rng.chance(0.5) ? 0 : rng.uniform(0, 0.1);

    o.fault_period_ms = static_cast<unsigned>(rng.between(200, 1500));
    o.crash = rng.uniform(0, 0.5);
    o.crash_any = rng.chance(0.3);
    o.down_min_ms = static_cast<unsigned>(rng.between(10, 500));
    o.down_max_ms = o.down_min_ms + static_cast<unsigned>(rng.between(0, 4000));
    o.partition = rng.uniform(0, 0.4);
    o.partition_max_ms = static_cast<unsigned>(rng.between(100, 5000));
    o.crash_after_answer = rng.chance(0.5) ? 0 : rng.uniform(0, 0.01);
    o.crash_after_vote = rng.chance(0.5) ? 0 : rng.uniform(0, 0.3);

    o.run_ms = static_cast<unsigned>(rng.between(8000, 20000));
    o.think_max_ms = static_cast<unsigned>(rng.between(0, 100));
    o.attempt_timeout_ms = static_cast<unsigned>(rng.between(300, 3000));

    // The mode and its values come from a generator of their own, seeded
    // from the seed: what a seed takes from `rng` does not depend on its mode.
    sim_random mode(seed ^ 0x6e6574776f726bULL);
    o.transport = mode.chance(0.5);
    if (o.transport) {
        // From a few seconds of heartbeats (drops while a peer is cut off or
        // slow) to plenty; always several times the largest message (a few
        // KiB here): a message bigger than the bound goes only into an empty
        // queue, which the pair's other groups may never leave.
        const std::uint64_t scale = mode.between(1, 4);
        o.queue_bytes = static_cast<unsigned>(scale << mode.between(15, 20));
        o.user_timeout_ms = mode.chance(0.3) ? 0 : static_cast<unsigned>(mode.between(200, 5000));
        o.reset = mode.uniform(0, 0.4);
        o.one_way = mode.uniform(0, 0.4);
        o.slow_link = mode.uniform(0, 0.4);
        o.slow_link_ms = static_cast<unsigned>(mode.between(100, 900));
        o.slow_link_max_ms = static_cast<unsigned>(mode.between(200, 5000));
    }
    // Whether entries leave in pieces that share the log's bytes (every
    // entry: 1) or copied into each message (0); a generator of its own, too.
    sim_random pieces(seed ^ 0x706965636573ULL);
    o.reference_bytes = pieces.chance(0.5) ? 1 : 0;
    // And whether libraft's batches go whole (0) or split into messages of
    // a few entries (raft_options::message_entry_bytes).
    o.message_entry_bytes = pieces.chance(0.5) ? static_cast<std::size_t>(pieces.between(1, 200)) : 0;
    return o;
}

std::string sim_options::describe() const {
    std::ostringstream out;
    out << "nodes=" << nodes << " groups=" << groups << " clients/group=" << clients_per_group
        << " election=" << election_ms << "ms heartbeat=" << heartbeat_ms
        << "ms pre_vote=" << pre_vote << " trailing=" << trailing << " checkpoint_every=" << checkpoint_every
        << " reference_bytes=" << reference_bytes << " message_entry_bytes=" << message_entry_bytes
        << " latency=" << latency_min_ms << ".." << latency_max_ms << "ms spike=" << spike
        << "(" << spike_ms << "ms)";
    if (transport) {
        out << " network=transport queue=" << queue_bytes << "B user_timeout=" << user_timeout_ms
            << "ms reset=" << reset << " one_way=" << one_way << " slow_link=" << slow_link
            << "(+" << slow_link_ms << "ms up to " << slow_link_max_ms << "ms)";
    } else {
        out << " network=lossy drop=" << drop << " dup=" << duplicate;
    }
    out << " fsync=" << fsync_min_ms << ".." << fsync_max_ms
        << "ms slow=" << slow_fsync << " failed_fsync=" << failed_fsync
        << " segment=" << segment_records << " crash=" << crash
        << (crash_any ? "(any)" : "(minority)") << " crash_after_answer=" << crash_after_answer
        << " crash_after_vote=" << crash_after_vote << " partition=" << partition
        << " run=" << run_ms << "ms";
    return out.str();
}

}  // namespace dstream::sim
