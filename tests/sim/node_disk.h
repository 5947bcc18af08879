#pragma once
// A node's durable storage, modelled on the server's: one WAL shared by
// every group of the node (log/node_wal.h) and the checkpoint files
// (log/checkpoint_files.h), on a disk whose flushes take time, are
// sometimes slow and sometimes fail.
//
// - Group commit: a flush covers every record written before it began; one
//   notice per group names its last token in the batch. Notices go out in
//   log order.
// - A failed flush cuts the log back to what is durable and fails that batch
//   and every record written after it (each group hears of each failed batch).
// - Segments of segment_records records; a closed segment is deleted once
//   every group's highest index in it is covered by that group's checkpoint
//   (node_wal::release).
// - A crash loses every record not flushed and every checkpoint still being
//   written; what is left is what recovery reads.
// - A leader's snapshot is written to a checkpoint at once (the server does
//   it on the strand), a replica's own checkpoint after a delay (the I/O pool).
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "event_queue.h"
#include "inputs.h"
#include "options.h"
#include "trace.h"

namespace dstream::sim {

class node_disk {
public:
    // A group's write outcomes: every record up to `token` durable (ok), or
    // the batch ending at `token` failed.
    using reporter = std::function<void(std::uint64_t token, bool ok)>;
    struct checkpoint {
        std::uint64_t index = 0;
        std::string header;  // replication::encode_snapshot_header
        std::string image;   // the checkpoint bytes and their CRC-32 trailer
    };

    node_disk(std::uint64_t node, event_queue& events, sim_random& rng, const sim_options& options,
              const tracer& trace);

    // Faults (slow and failing flushes and checkpoints) on or off: off once
    // the cluster must settle.
    void set_faults(bool on) { _faults = on; }

    void attach(std::uint32_t group, reporter report) { _reporters[group] = std::move(report); }
    void submit(std::uint32_t group, std::uint64_t index, std::string payload, std::uint64_t token);
    void release(std::uint32_t group, std::uint64_t index);

    // Written and durable at once; false: the write failed.
    bool write_checkpoint(std::uint32_t group, checkpoint c);
    // Written after a while; `done(false)`: it failed. Never runs after a crash.
    void save_checkpoint(std::uint32_t group, checkpoint c, std::function<void(bool)> done);
    const checkpoint* newest_checkpoint(std::uint32_t group) const;

    void crash();
    // Every durable record, in log order.
    void recover(const std::function<void(std::uint32_t group, std::uint64_t index,
                                          std::string_view payload)>& visit) const;
    std::size_t records() const;

private:
    struct record {
        std::uint64_t seq = 0;  // position in the log, over all time
        std::uint32_t group = 0;
        std::uint64_t index = 0;
        std::string payload;
        std::uint64_t token = 0;
    };
    struct segment {
        std::vector<record> records;
        bool closed = false;
    };
    struct notice {
        std::uint32_t group;
        std::uint64_t token;
        bool ok;
    };

    void start_flush();
    void finish_flush(std::uint64_t epoch);
    // The last token of each group among records with seq in (from, to].
    void notices_for(std::uint64_t from, std::uint64_t to, bool ok, std::vector<notice>& out) const;
    void deliver(const std::vector<notice>& notices);
    void delete_covered_segments();
    std::uint64_t delay(unsigned min_ms, unsigned max_ms);

    std::uint64_t _node;
    event_queue& _events;
    sim_random& _rng;
    const sim_options& _options;
    const tracer& _trace;
    bool _faults = true;
    std::uint64_t _epoch = 0;  // a crash voids the events scheduled before it

    std::vector<segment> _segments;
    std::uint64_t _next_seq = 1;
    std::uint64_t _durable_seq = 0;  // records up to it are flushed
    std::uint64_t _flush_seq = 0;    // the flush in flight covers up to it; 0: none
    std::map<std::uint32_t, std::uint64_t> _released;
    std::map<std::uint32_t, reporter> _reporters;
    std::map<std::uint32_t, std::map<std::uint64_t, checkpoint>> _checkpoints;
};

}  // namespace dstream::sim
