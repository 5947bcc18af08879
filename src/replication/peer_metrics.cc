#include "replication/peer_metrics.h"

#include <string>

namespace dstream::replication {

peer_metrics::peer_slot& peer_metrics::of(std::uint64_t peer) {
    const std::lock_guard lock(_mutex);
    return _peers[peer];
}

void peer_metrics::collect(metrics::exposition& out) const {
    const std::lock_guard lock(_mutex);
    if (_peers.empty()) return;
    const auto each = [&](std::string_view name, metrics::metric_type type, std::string_view help,
                          auto value) {
        out.family(name, type, help);
        for (const auto& [peer, slot] : _peers) {
            const std::string label = std::to_string(peer);
            out.sample(name, {{"peer", label}}, value(slot));
        }
    };
    using slot = peer_slot;
    each("dstream_peer_sent_bytes_total", metrics::metric_type::counter,
         "Bytes written to the connection with the peer, framing and keep-alive included",
         [](const slot& s) { return s.sent_bytes.value(); });
    each("dstream_peer_received_bytes_total", metrics::metric_type::counter,
         "Bytes read from the connection with the peer, framing and keep-alive included",
         [](const slot& s) { return s.received_bytes.value(); });
    each("dstream_peer_sent_messages_total", metrics::metric_type::counter,
         "Raft messages written to the peer",
         [](const slot& s) { return s.sent_messages.value(); });
    each("dstream_peer_received_messages_total", metrics::metric_type::counter,
         "Raft messages read from the peer",
         [](const slot& s) { return s.received_messages.value(); });
    each("dstream_peer_dropped_messages_total", metrics::metric_type::counter,
         "Raft messages for the peer dropped unsent: no connection, or its queue full",
         [](const slot& s) { return s.dropped_messages.value(); });
    each("dstream_peer_writes_total", metrics::metric_type::counter,
         "Socket writes to the peer, each of every message queued when it began",
         [](const slot& s) { return s.writes.value(); });
    each("dstream_peer_reconnects_total", metrics::metric_type::counter,
         "Connections with the peer made after the first one",
         [](const slot& s) { return s.reconnects.value(); });
    each("dstream_peer_connected", metrics::metric_type::gauge,
         "1 while a connection with the peer is up, else 0",
         [](const slot& s) { return static_cast<std::uint64_t>(s.connected.value()); });
    each("dstream_peer_rtt_seconds", metrics::metric_type::gauge,
         "The round trip of the last ping answered by the peer",
         [](const slot& s) { return static_cast<double>(s.rtt_us.load(std::memory_order_relaxed)) / 1e6; });
}

}  // namespace dstream::replication
