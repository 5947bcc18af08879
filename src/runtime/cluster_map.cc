#include "runtime/cluster_map.h"

#include <algorithm>
#include <charconv>
#include <stdexcept>

#include "runtime/node_identity.h"

namespace dstream::runtime {

std::string host_port::text() const {
    const bool v6 = host.find(':') != std::string::npos;
    return (v6 ? "[" + host + "]" : host) + ":" + std::to_string(port);
}

std::optional<host_port> parse_host_port(std::string_view text) {
    const auto colon = text.rfind(':');
    if (colon == std::string_view::npos) return std::nullopt;
    std::string_view host = text.substr(0, colon);
    const std::string_view port = text.substr(colon + 1);
    if (host.size() >= 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    } else if (host.find(':') != std::string_view::npos) {
        return std::nullopt;  // an IPv6 address needs its brackets
    }
    unsigned value = 0;
    const auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), value);
    if (host.empty() || port.empty() || ec != std::errc() || end != port.data() + port.size() ||
        value == 0 || value > 65535)
        return std::nullopt;
    return host_port{std::string(host), static_cast<std::uint16_t>(value)};
}

cluster_map::cluster_map(std::string cluster_id, std::size_t groups, unsigned replicas,
                         std::vector<cluster_node> nodes)
    : _cluster_id(std::move(cluster_id)),
      _groups(groups),
      _replicas(replicas),
      _nodes(std::move(nodes)) {
    const auto fail = [](const std::string& why) { throw std::invalid_argument(why); };
    if (!is_valid_cluster_id(_cluster_id))
        fail("cluster_id \"" + _cluster_id + "\" is not 1 to 64 of A-Z a-z 0-9 . _ -");
    if (_groups < 1 || _groups > 4096) fail("groups must be 1 to 4096");
    if (_replicas != 3 && _replicas != 5) fail("replicas must be 3 or 5");
    if (_nodes.size() < _replicas)
        fail("replicas = " + std::to_string(_replicas) + " needs as many nodes, and there are " +
             std::to_string(_nodes.size()));
    std::sort(_nodes.begin(), _nodes.end(),
              [](const cluster_node& a, const cluster_node& b) { return a.id < b.id; });
    for (std::size_t i = 0; i < _nodes.size(); ++i) {
        const cluster_node& n = _nodes[i];
        const std::string name = "node " + std::to_string(n.id);
        if (n.id == 0) fail("a node's id must be 1 or more");
        if (i > 0 && _nodes[i - 1].id == n.id) fail(name + " is listed twice");
        if (n.raft == n.http) fail(name + ": raft and http are the same address");
        for (std::size_t j = 0; j < i; ++j) {
            for (const host_port* a : {&n.raft, &n.http}) {
                if (*a == _nodes[j].raft || *a == _nodes[j].http)
                    fail(name + " uses " + a->text() + ", which node " +
                         std::to_string(_nodes[j].id) + " uses too");
            }
        }
    }
}

const cluster_node* cluster_map::node(std::uint32_t id) const {
    const auto it = std::lower_bound(_nodes.begin(), _nodes.end(), id,
                                     [](const cluster_node& n, std::uint32_t v) { return n.id < v; });
    return it != _nodes.end() && it->id == id ? &*it : nullptr;
}

std::vector<std::uint32_t> cluster_map::voters(std::size_t group) const {
    std::vector<std::uint32_t> ids;
    ids.reserve(_replicas);
    for (unsigned k = 0; k < _replicas; ++k) ids.push_back(_nodes[(group + k) % _nodes.size()].id);
    return ids;
}

bool cluster_map::hosts(std::uint32_t node_id, std::size_t group) const {
    const auto ids = voters(group);
    return std::find(ids.begin(), ids.end(), node_id) != ids.end();
}

}  // namespace dstream::runtime
