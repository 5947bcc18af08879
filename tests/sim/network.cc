#include "network.h"

#include <algorithm>

#include "replication/raft/raft_core.h"

namespace dstream::sim {

network::network(event_queue& events, sim_random& rng, const sim_options& options,
                 const tracer& trace, deliver_fn deliver, sent_fn sent, up_fn up)
    : _events(events),
      _rng(rng),
      _options(options),
      _trace(trace),
      _deliver(std::move(deliver)),
      _on_sent(std::move(sent)),
      _up(std::move(up)) {
    if (_options.transport) {
        _slots = _options.nodes + 1;
        _dirs.resize(_slots * _slots);
        _pairs.resize(_slots * _slots);
        _one_way_cuts.assign(_slots * _slots, false);
    }
}

std::uint64_t network::latency() {
    std::uint64_t ms = _rng.between(_options.latency_min_ms, _options.latency_max_ms);
    if (_faults && _rng.chance(_options.spike)) ms += _rng.between(1, _options.spike_ms);
    return ms;
}

std::uint64_t network::latency(std::uint64_t from, std::uint64_t to) {
    std::uint64_t ms = latency();
    const pair& p = pair_of(from, to);
    if (p.slow_until > _events.now()) ms += p.slow_ms;
    return ms;
}

void network::send(std::uint64_t from, std::uint64_t to, std::uint32_t group,
                   std::string_view bytes) {
    ++_count.sent;
    if (_on_sent) _on_sent(from, bytes);
    if (_options.transport) {
        send_transport(from, to, group, bytes);
    } else {
        send_lossy(from, to, group, bytes);
    }
}

void network::trace_message(std::uint64_t from, std::uint64_t to, std::uint32_t group,
                            std::string_view bytes) const {
    if (!_options.trace_messages) return;
    char line[256];
    if (raft_core_message_describe(bytes.data(), bytes.size(), line, sizeof line) >= 0) {
        _trace("g{} n{} -> n{}: {}", group, from, to, line);
    }
}

// Lossy.

void network::send_lossy(std::uint64_t from, std::uint64_t to, std::uint32_t group,
                         std::string_view bytes) {
    if (_faults && _rng.chance(_options.drop)) {
        ++_count.dropped;
        return;
    }
    const int copies = _faults && _rng.chance(_options.duplicate) ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
        _events.after(latency(), [this, from, to, group, bytes = std::string(bytes)] {
            // A partition cuts what is in flight too.
            if (!connected(from, to)) return;
            trace_message(from, to, group, bytes);
            _deliver(from, to, group, bytes);
        });
    }
}

// Partitions, both modes.

void network::partition(std::vector<int> side) {
    _side = std::move(side);
    update_cuts();
}

void network::heal_partition() {
    _side.clear();
    update_cuts();
}

void network::one_way(const std::vector<std::pair<std::uint64_t, std::uint64_t>>& cuts) {
    _one_way = true;
    for (const auto& [from, to] : cuts) _one_way_cuts[from * _slots + to] = true;
    update_cuts();
}

void network::heal_one_way() {
    _one_way = false;
    std::fill(_one_way_cuts.begin(), _one_way_cuts.end(), false);
    update_cuts();
}

void network::heal() {
    _side.clear();
    if (!_options.transport) return;
    _one_way = false;
    std::fill(_one_way_cuts.begin(), _one_way_cuts.end(), false);
    for (auto& p : _pairs) {
        p.slow_until = 0;
        ++p.slow_episode;
    }
    update_cuts();
}

// Transport.

void network::update_cuts() {
    if (!_options.transport) return;
    for (std::uint64_t from = 1; from < _slots; ++from) {
        for (std::uint64_t to = 1; to < _slots; ++to) {
            if (from == to) continue;
            direction& d = dir(from, to);
            const bool cut = !connected(from, to) || _one_way_cuts[from * _slots + to];
            if (cut == d.cut) continue;
            d.cut = cut;
            if (!cut) {
                // TCP retransmits what was held, in order.
                if (pair_of(from, to).up) flow(from, to);
                continue;
            }
            // What was in flight is retransmitted once the direction heals.
            ++d.cut_episode;
            ++d.generation;
            d.scheduled = 0;
            if (_options.user_timeout_ms == 0) continue;
            _events.after(_options.user_timeout_ms, [this, from, to, episode = d.cut_episode] {
                const direction& now = dir(from, to);
                if (!now.cut || now.cut_episode != episode) return;
                break_pair(from, to, "timeout");
            });
        }
    }
}

void network::send_transport(std::uint64_t from, std::uint64_t to, std::uint32_t group,
                             std::string_view bytes) {
    direction& d = dir(from, to);
    if (d.bytes > 0 && d.bytes + bytes.size() > _options.queue_bytes) {
        ++_count.queue_full;
        if (!d.full) {
            _trace("n{} -> n{}: queue full ({} bytes in {} messages), drops", from, to, d.bytes,
                   d.queue.size());
        }
        d.full = true;
        return;
    }
    d.full = false;
    d.queue.push_back(message{group, std::string(bytes)});
    d.bytes += bytes.size();
    if (pair_of(from, to).up && !d.cut) flow(from, to);
}

void network::flow(std::uint64_t from, std::uint64_t to) {
    direction& d = dir(from, to);
    for (; d.scheduled < d.queue.size(); ++d.scheduled) {
        // FIFO: nothing arrives before what was sent ahead of it.
        const std::uint64_t at = std::max(_events.now() + latency(from, to), d.last_arrival);
        d.last_arrival = at;
        _events.at(at, [this, from, to, generation = d.generation] { arrive(from, to, generation); });
    }
}

void network::arrive(std::uint64_t from, std::uint64_t to, std::uint64_t generation) {
    direction& d = dir(from, to);
    if (d.generation != generation) return;
    message m = std::move(d.queue.front());
    d.queue.pop_front();
    d.bytes -= m.bytes.size();
    --d.scheduled;
    trace_message(from, to, m.group, m.bytes);
    _deliver(from, to, m.group, m.bytes);
}

std::uint64_t network::clear(direction& d) {
    const std::uint64_t lost = d.queue.size();
    d.queue.clear();
    d.bytes = 0;
    d.scheduled = 0;
    ++d.generation;
    _count.lost += lost;
    return lost;
}

void network::break_pair(std::uint64_t a, std::uint64_t b, const char* why) {
    if (a > b) std::swap(a, b);
    pair& p = pair_of(a, b);
    if (!p.up) return;
    p.up = false;
    ++_count.breaks;
    const std::uint64_t lost = clear(dir(a, b)) + clear(dir(b, a));
    _trace("n{} <-> n{}: the connection breaks ({}), {} messages lost", a, b, why, lost);
    schedule_reconnect(a, b, 0);
}

void network::schedule_reconnect(std::uint64_t a, std::uint64_t b, std::uint64_t delay_ms) {
    pair& p = pair_of(a, b);
    if (delay_ms == 0) {
        delay_ms = _rng.between(p.backoff_ms / 2, p.backoff_ms);
        p.backoff_ms = std::min(p.backoff_ms * 2, backoff_max_ms);
    }
    _events.after(delay_ms, [this, a, b, attempt = ++p.attempt] { reconnect(a, b, attempt); });
}

void network::reconnect(std::uint64_t a, std::uint64_t b, std::uint64_t attempt) {
    pair& p = pair_of(a, b);
    if (p.up || p.attempt != attempt) return;
    // A handshake needs both nodes and both directions.
    if (_up(a) && _up(b) && !dir(a, b).cut && !dir(b, a).cut) {
        p.up = true;
        p.backoff_ms = backoff_min_ms;
        _trace("n{} <-> n{}: reconnects", a, b);
        flow(a, b);
        flow(b, a);
        return;
    }
    schedule_reconnect(a, b, 0);
}

void network::reset(std::uint64_t a, std::uint64_t b) { break_pair(a, b, "reset"); }

void network::crashed(std::uint64_t node) {
    if (!_options.transport) return;
    for (std::uint64_t other = 1; other < _slots; ++other) {
        if (other == node) continue;
        break_pair(node, other, "a crash");
        // What the crashed node still held for a peer died with it.
        clear(dir(node, other));
    }
}

void network::started(std::uint64_t node) {
    if (!_options.transport) return;
    for (std::uint64_t other = 1; other < _slots; ++other) {
        if (other == node) continue;
        const std::uint64_t a = std::min(node, other), b = std::max(node, other);
        pair& p = pair_of(a, b);
        if (p.up) continue;
        // The dial takes a round trip.
        p.backoff_ms = backoff_min_ms;
        schedule_reconnect(a, b, 2 * _options.latency_max_ms + 1);
    }
}

void network::slow(std::uint64_t a, std::uint64_t b, std::uint64_t extra_ms, std::uint64_t for_ms) {
    pair& p = pair_of(a, b);
    p.slow_ms = extra_ms;
    p.slow_until = _events.now() + for_ms;
    const std::uint64_t episode = ++p.slow_episode;
    _events.after(for_ms, [this, a, b, episode] {
        if (pair_of(a, b).slow_episode != episode) return;
        _trace("n{} <-> n{}: the link is fast again", std::min(a, b), std::max(a, b));
    });
}

}  // namespace dstream::sim
