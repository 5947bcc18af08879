#include "cli/recovery.h"

#include <algorithm>
#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>

#include <spdlog/spdlog.h>

#include "cli/node_metrics.h"
#include "metrics/stopwatch.h"
#include "replication/raft_records.h"
#include "replication/recovery.h"

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

std::vector<recovered_log> recover(
    service::engine& engine, const log::checkpoint_files& checkpoints, log::node_wal& wal,
    const std::function<std::vector<std::uint64_t>(std::uint32_t group)>& voters_of) {
    const metrics::stopwatch took;
    std::vector<replication::group_recovery> groups;
    std::vector<recovered_log> out(engine.group_count());
    for (std::size_t g = 0; g < engine.group_count(); ++g) {
        groups.emplace_back(static_cast<std::uint32_t>(g), voters_of(static_cast<std::uint32_t>(g)));
    }
    const auto newest = checkpoints.newest();
    for (const auto& [id, entry] : newest) {
        if (id >= groups.size()) {
            throw std::runtime_error("checkpoint " + entry.path.string() + " names group " +
                                     std::to_string(id) + " beyond --groups");
        }
        auto loaded = checkpoints.load(entry);
        if (!loaded) throw std::runtime_error(loaded.err().message);
        std::optional<replication::snapshot_header> header;
        if (!loaded->header.empty()) {
            auto decoded = replication::decode_snapshot_header(loaded->header);
            if (!decoded) {
                throw std::runtime_error("checkpoint " + entry.path.string() + ": " +
                                         decoded.err().message);
            }
            header = std::move(*decoded);
        }
        std::uint32_t group_id = 0;
        std::uint64_t index = 0;
        auto state = state::group_state::restore_checkpoint(loaded->image, group_id, index);
        if (!state || group_id != id || index != entry.index ||
            (header && header->meta.index != index)) {
            throw std::runtime_error("checkpoint " + entry.path.string() + " is damaged" +
                                     (state ? std::string() : ": " + state.err().message));
        }
        groups[id].checkpoint(index, header);
        engine.restore(id, std::move(*state), index, header ? header->meta.term : 1);
        out[id].checkpoint = index;
    }
    spdlog::info("recovery: checkpoints loaded={} elapsed_ms={}", newest.size(),
                 took.elapsed_us() / 1000);

    replay_progress progress;
    const log::wal_recovery recovered = wal.recover(
        [&](std::uint32_t group, std::uint64_t index, std::string_view payload,
            log::wal_payloads kind) {
            if (group >= groups.size()) {
                throw std::runtime_error(
                    "the log holds group " + std::to_string(group) + " but the node runs " +
                    std::to_string(groups.size()) +
                    " groups: start it with the --groups it was created with");
            }
            groups[group].record(index, payload, kind,
                                 [&](std::uint64_t i, std::uint64_t term, std::string_view bytes) {
                                     engine.replay(group, i, term, bytes);
                                 });
            progress.record(payload.size());
        });
    std::uint64_t applied = 0;
    for (std::size_t g = 0; g < groups.size(); ++g) {
        applied += groups[g].applied();
        out[g].last_index = groups[g].last_index();
        out[g].state = groups[g].finish();
    }

    const std::uint64_t elapsed_ms = took.elapsed_us() / 1000;
    // The crash test and the restart benchmark read the first part of this line.
    spdlog::info(
        "recovery: recovered {} log records ({} bytes, {} segments) in {} ms; replayed={} "
        "checkpoints={} torn_tail_cut={}",
        recovered.records, recovered.bytes, recovered.segments, elapsed_ms, applied,
        newest.size(), recovered.torn_tail_cut);
    auto& m = node_metrics::get();
    m.recovery_us.set(static_cast<std::int64_t>(took.elapsed_us()));
    m.checkpoints_loaded.set(static_cast<std::int64_t>(newest.size()));
    m.records_replayed.set(static_cast<std::int64_t>(applied));
    m.bytes_replayed.set(static_cast<std::int64_t>(recovered.bytes));
    return out;
}

}  // namespace dstream::cli
