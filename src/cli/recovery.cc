#include "cli/recovery.h"

#include <algorithm>
#include <chrono>

#include <spdlog/spdlog.h>

#include "cli/node_metrics.h"
#include "metrics/stopwatch.h"

namespace dstream::cli {
namespace {

// A progress line every few seconds or every so many bytes, whichever
// comes first, so an operator sees a long replay move.
constexpr auto progress_interval = std::chrono::seconds(2);
constexpr std::uint64_t progress_bytes = std::uint64_t{256} << 20;
// Records between two looks at the clock.
constexpr std::uint64_t clock_stride = 4096;

class replay_progress {
public:
    void record(std::size_t bytes) {
        ++_records;
        _bytes += bytes;
        if (_bytes < _next_bytes && _records % clock_stride != 0) return;
        const auto now = std::chrono::steady_clock::now();
        if (_bytes < _next_bytes && now < _next_time) return;
        spdlog::info("recovery: replaying WAL records={} payload_mib={} elapsed_ms={}", _records,
                     _bytes >> 20, _took.elapsed_us() / 1000);
        _next_bytes = _bytes + progress_bytes;
        _next_time = now + progress_interval;
    }
    std::uint64_t bytes() const { return _bytes; }

private:
    metrics::stopwatch _took;
    std::uint64_t _records = 0;
    std::uint64_t _bytes = 0;
    std::uint64_t _next_bytes = progress_bytes;
    std::chrono::steady_clock::time_point _next_time =
        std::chrono::steady_clock::now() + progress_interval;
};

}  // namespace

std::vector<std::uint64_t> recover(service::engine& engine,
                                   const log::checkpoint_files& checkpoints, log::node_wal& wal) {
    const metrics::stopwatch took;
    const std::size_t loaded = engine.restore_checkpoints(checkpoints);
    spdlog::info("recovery: checkpoints loaded={} elapsed_ms={}", loaded, took.elapsed_us() / 1000);

    // A group's log continues past its checkpoint even when recovery finds
    // none of its records (their segments were deleted).
    std::vector<std::uint64_t> last_index(engine.group_count(), 0);
    for (std::size_t g = 0; g < last_index.size(); ++g) last_index[g] = engine.checkpoint_index(g);
    std::uint64_t applied = 0;
    replay_progress progress;
    const log::wal_recovery recovered =
        wal.recover([&](std::uint32_t group, std::uint64_t index, std::string_view record) {
            if (engine.replay(group, index, record)) ++applied;
            last_index[group] = std::max(last_index[group], index);
            progress.record(record.size());
        });

    const std::uint64_t elapsed_ms = took.elapsed_us() / 1000;
    // The crash test and the restart benchmark read the first part of this line.
    spdlog::info(
        "recovery: recovered {} log records ({} bytes, {} segments) in {} ms; replayed={} "
        "checkpoints={} torn_tail_cut={}",
        recovered.records, recovered.bytes, recovered.segments, elapsed_ms, applied, loaded,
        recovered.torn_tail_cut);
    auto& m = node_metrics::get();
    m.recovery_us.set(static_cast<std::int64_t>(took.elapsed_us()));
    m.checkpoints_loaded.set(static_cast<std::int64_t>(loaded));
    m.records_replayed.set(static_cast<std::int64_t>(applied));
    m.bytes_replayed.set(static_cast<std::int64_t>(recovered.bytes));
    return last_index;
}

}  // namespace dstream::cli
