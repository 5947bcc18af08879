#include "replication/local_transport.h"

#include "replication/raft_group_log.h"

namespace dstream::replication {

raft_transport& local_network::transport(std::uint64_t node, std::uint32_t group) {
    const std::lock_guard lock(_mutex);
    auto& slot = _endpoints[{node, group}];
    if (!slot) slot = std::make_unique<endpoint>(*this, node, group);
    return *slot;
}

void local_network::attach(std::uint64_t node, std::uint32_t group, raft_group_log& log,
                           boost::asio::any_io_executor strand) {
    const std::lock_guard lock(_mutex);
    _logs[{node, group}] = attached{&log, std::move(strand)};
}

void local_network::isolate(std::uint64_t node) {
    const std::lock_guard lock(_mutex);
    _isolated.insert(node);
}

void local_network::heal(std::uint64_t node) {
    const std::lock_guard lock(_mutex);
    _isolated.erase(node);
}

void local_network::drop_longer_than(std::size_t bytes) {
    const std::lock_guard lock(_mutex);
    _max_bytes = bytes;
}

std::uint64_t local_network::dropped_long() const {
    const std::lock_guard lock(_mutex);
    return _dropped_long;
}

void local_network::deliver(std::uint64_t from, std::uint64_t to, std::uint32_t group,
                            std::string bytes) {
    attached target;
    {
        const std::lock_guard lock(_mutex);
        if (_isolated.contains(from) || _isolated.contains(to)) return;
        if (bytes.size() > _max_bytes) {
            ++_dropped_long;
            return;
        }
        const auto it = _logs.find({to, group});
        if (it == _logs.end()) return;
        target = it->second;
    }
    boost::asio::post(target.strand, [log = target.log, bytes = std::move(bytes)] {
        log->receive(bytes);
    });
}

}  // namespace dstream::replication
