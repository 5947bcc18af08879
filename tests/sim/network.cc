#include "network.h"

#include "replication/raft/raft_core.h"

namespace dstream::sim {

network::network(event_queue& events, sim_random& rng, const sim_options& options,
                 const tracer& trace, deliver_fn deliver, sent_fn sent)
    : _events(events),
      _rng(rng),
      _options(options),
      _trace(trace),
      _deliver(std::move(deliver)),
      _on_sent(std::move(sent)) {}

std::uint64_t network::latency() {
    std::uint64_t ms = _rng.between(_options.latency_min_ms, _options.latency_max_ms);
    if (_faults && _rng.chance(_options.spike)) ms += _rng.between(1, _options.spike_ms);
    return ms;
}

void network::partition(std::vector<int> side) { _side = std::move(side); }

void network::send(std::uint64_t from, std::uint64_t to, std::uint32_t group,
                   std::string_view bytes) {
    ++_sent;
    if (_on_sent) _on_sent(from, bytes);
    if (_faults && _rng.chance(_options.drop)) return;
    const int copies = _faults && _rng.chance(_options.duplicate) ? 2 : 1;
    for (int i = 0; i < copies; ++i) {
        _events.after(latency(), [this, from, to, group, bytes = std::string(bytes)] {
            // A partition cuts what is in flight too.
            if (!connected(from, to)) return;
            if (_options.trace_messages) {
                char line[256];
                if (raft_core_message_describe(bytes.data(), bytes.size(), line, sizeof line) >= 0) {
                    _trace("g{} n{} -> n{}: {}", group, from, to, line);
                }
            }
            _deliver(from, to, group, bytes);
        });
    }
}

}  // namespace dstream::sim
