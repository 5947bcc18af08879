#pragma once
// What one seed simulates: the cluster's shape and how hostile its network,
// disks and operators are. Every value is drawn from the seed.
#include <cstddef>
#include <cstdint>
#include <string>

#include "inputs.h"

namespace dstream::sim {

struct sim_options {
    std::uint64_t seed = 1;
    bool verbose = false;
    bool trace_messages = false;  // every message delivered, in the trace

    unsigned nodes = 3;
    unsigned groups = 1;
    unsigned clients_per_group = 3;

    // Raft.
    unsigned election_ms = 300;
    unsigned heartbeat_ms = 50;
    bool pre_vote = true;
    unsigned trailing = 8;       // entries kept before a snapshot
    std::size_t reference_bytes = 0;  // raft_options::reference_bytes
    std::size_t message_entry_bytes = 0;  // raft_options::message_entry_bytes
    unsigned checkpoint_every = 10;  // applied entries between a replica's checkpoints
    unsigned digest_every = 1;       // the applied state is compared at indexes that are multiples

    // Network: a message's latency is [min, max] ms, sometimes a spike.
    unsigned latency_min_ms = 1;
    unsigned latency_max_ms = 10;
    double spike = 0.01;  // chance of a latency of up to spike_ms
    unsigned spike_ms = 400;
    double drop = 0.02;
    double duplicate = 0.01;

    // Transport mode (network.h) instead of the lossy one: one FIFO
    // connection per pair; drop and duplicate do not apply, a spike is a
    // retransmission that delays what follows it too.
    bool transport = false;
    unsigned queue_bytes = 1 << 20;  // per peer and direction, not yet arrived
    unsigned user_timeout_ms = 0;    // a cut direction breaks its connection after; 0: never
    // Faults, each tried every fault_period_ms: a connection resets, a
    // one-way partition, a slow link (+slow_link_ms for up to slow_link_max_ms).
    double reset = 0.0;
    double one_way = 0.0;
    double slow_link = 0.0;
    unsigned slow_link_ms = 300;
    unsigned slow_link_max_ms = 3000;

    // Disk: an fsync takes [min, max] ms; a slow one up to slow_ms; some fail.
    unsigned fsync_min_ms = 0;
    unsigned fsync_max_ms = 4;
    double slow_fsync = 0.02;
    unsigned slow_ms = 600;
    double failed_fsync = 0.0;
    unsigned segment_records = 8;  // records per WAL segment
    unsigned checkpoint_min_ms = 1;
    unsigned checkpoint_max_ms = 80;
    double failed_checkpoint = 0.02;

    // Faults, each tried every fault_period_ms.
    unsigned fault_period_ms = 700;
    double crash = 0.25;
    bool crash_any = false;  // else a minority at most is down at a time
    unsigned down_min_ms = 50;
    unsigned down_max_ms = 3000;
    double partition = 0.15;
    unsigned partition_max_ms = 3000;
    // A node crashes just after it answered a vote or an append, the moment
    // a durability bug shows (the answer promised what the disk may lack).
    // Votes are rare: they get a chance of their own.
    double crash_after_answer = 0.0;
    double crash_after_vote = 0.0;

    // Phases: faults for run_ms, then everything heals and the cluster
    // must settle within settle_ms.
    unsigned run_ms = 15000;
    unsigned settle_ms = 60000;

    // Clients.
    unsigned think_max_ms = 40;
    unsigned attempt_timeout_ms = 1500;

    // Draws the options of a seed.
    static sim_options draw(std::uint64_t seed, sim_random& rng);
    std::string describe() const;
};

}  // namespace dstream::sim
