#include "node_disk.h"

#include <algorithm>

namespace dstream::sim {

node_disk::node_disk(std::uint64_t node, event_queue& events, sim_random& rng,
                     const sim_options& options, const tracer& trace)
    : _node(node), _events(events), _rng(rng), _options(options), _trace(trace) {}

std::uint64_t node_disk::delay(unsigned min_ms, unsigned max_ms) {
    return _rng.between(min_ms, max_ms);
}

void node_disk::submit(std::uint32_t group, std::uint64_t index, std::string payload,
                       std::uint64_t token) {
    if (_segments.empty() || _segments.back().closed) _segments.emplace_back();
    segment& open = _segments.back();
    open.records.push_back(record{_next_seq++, group, index, std::move(payload), token});
    if (open.records.size() >= _options.segment_records) open.closed = true;
    if (_flush_seq == 0) start_flush();
}

void node_disk::start_flush() {
    _flush_seq = _next_seq - 1;
    std::uint64_t took = delay(_options.fsync_min_ms, _options.fsync_max_ms);
    if (_faults && _rng.chance(_options.slow_fsync)) took += delay(1, _options.slow_ms);
    _events.after(took, [this, epoch = _epoch] { finish_flush(epoch); });
}

void node_disk::notices_for(std::uint64_t from, std::uint64_t to, bool ok,
                            std::vector<notice>& out) const {
    std::map<std::uint32_t, std::uint64_t> last;
    for (const auto& s : _segments) {
        for (const auto& r : s.records) {
            if (r.seq > from && r.seq <= to) last[r.group] = std::max(last[r.group], r.token);
        }
    }
    for (const auto& [group, token] : last) out.push_back(notice{group, token, ok});
}

void node_disk::finish_flush(std::uint64_t epoch) {
    if (epoch != _epoch) return;  // the node crashed meanwhile
    const std::uint64_t target = std::exchange(_flush_seq, 0);
    std::vector<notice> notices;
    if (_faults && _rng.chance(_options.failed_fsync)) {
        // Cut back to what is durable: this batch fails, and so does every
        // record written after it (a batch of its own).
        notices_for(_durable_seq, target, false, notices);
        notices_for(target, _next_seq - 1, false, notices);
        _trace("n{} disk: flush failed: {} records lost", _node, _next_seq - 1 - _durable_seq);
        for (auto& s : _segments) {
            std::erase_if(s.records, [this](const record& r) { return r.seq > _durable_seq; });
        }
        std::erase_if(_segments, [](const segment& s) { return s.records.empty(); });
        if (!_segments.empty()) _segments.back().closed = false;  // appends go on after it
        _next_seq = _durable_seq + 1;
    } else {
        notices_for(_durable_seq, target, true, notices);
        _durable_seq = target;
        if (_next_seq - 1 > _durable_seq) start_flush();
    }
    deliver(notices);
}

void node_disk::deliver(const std::vector<notice>& notices) {
    // A report may write again (a new flush): the notices were taken first.
    for (const auto& n : notices) {
        const auto it = _reporters.find(n.group);
        if (it != _reporters.end() && it->second) it->second(n.token, n.ok);
    }
}

void node_disk::release(std::uint32_t group, std::uint64_t index) {
    auto& released = _released[group];
    released = std::max(released, index);
    delete_covered_segments();
}

void node_disk::delete_covered_segments() {
    // As node_wal: a closed segment goes once, for every group in it, its
    // highest index is at most what that group's checkpoint covers.
    std::erase_if(_segments, [this](const segment& s) {
        if (!s.closed || s.records.empty()) return false;
        // Only what is flushed may go; a closed segment holds nothing newer.
        if (s.records.back().seq > _durable_seq) return false;
        std::map<std::uint32_t, std::uint64_t> highest;
        for (const auto& r : s.records) highest[r.group] = std::max(highest[r.group], r.index);
        return std::all_of(highest.begin(), highest.end(), [this](const auto& h) {
            const auto it = _released.find(h.first);
            return it != _released.end() && h.second <= it->second;
        });
    });
}

bool node_disk::write_checkpoint(std::uint32_t group, checkpoint c) {
    if (_faults && _rng.chance(_options.failed_checkpoint)) return false;
    auto& kept = _checkpoints[group];
    const std::uint64_t index = c.index;
    kept[index] = std::move(c);
    // checkpoint_files::write removes the group's older ones.
    std::erase_if(kept, [index](const auto& k) { return k.first < index; });
    return true;
}

void node_disk::save_checkpoint(std::uint32_t group, checkpoint c, std::function<void(bool)> done) {
    const std::uint64_t took = delay(_options.checkpoint_min_ms, _options.checkpoint_max_ms);
    _events.after(took, [this, epoch = _epoch, group, c = std::move(c),
                         done = std::move(done)]() mutable {
        if (epoch != _epoch) return;
        const std::uint64_t index = c.index;
        const bool ok = write_checkpoint(group, std::move(c));
        // wal_group_disk::save_snapshot: the covered log goes once it is durable.
        if (ok) release(group, index);
        done(ok);
    });
}

const node_disk::checkpoint* node_disk::newest_checkpoint(std::uint32_t group) const {
    const auto it = _checkpoints.find(group);
    if (it == _checkpoints.end() || it->second.empty()) return nullptr;
    return &it->second.rbegin()->second;
}

void node_disk::crash() {
    ++_epoch;
    _flush_seq = 0;
    _reporters.clear();
    for (auto& s : _segments) {
        std::erase_if(s.records, [this](const record& r) { return r.seq > _durable_seq; });
    }
    std::erase_if(_segments, [](const segment& s) { return s.records.empty(); });
    // node_wal::start appends after the newest segment's records.
    if (!_segments.empty()) _segments.back().closed = false;
    _next_seq = _durable_seq + 1;
}

void node_disk::recover(const std::function<void(std::uint32_t group, std::uint64_t index,
                                                 std::string_view payload)>& visit) const {
    for (const auto& s : _segments) {
        for (const auto& r : s.records) visit(r.group, r.index, r.payload);
    }
}

std::size_t node_disk::records() const {
    std::size_t n = 0;
    for (const auto& s : _segments) n += s.records.size();
    return n;
}

}  // namespace dstream::sim
