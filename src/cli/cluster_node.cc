#include "cli/cluster_node.h"

#include <stdexcept>

#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <nlohmann/json.hpp>

#include "replication/raft_metrics.h"
#include "runtime/random.h"

namespace dstream::cli {
namespace {

replication::peer_network_options network_options(const runtime::cluster_map& map,
                                                   std::uint32_t self) {
    const runtime::cluster_node* me = map.node(self);
    if (me == nullptr) {
        throw std::invalid_argument("--node-id " + std::to_string(self) +
                                    " is not a node of the cluster file");
    }
    replication::peer_network_options o;
    o.cluster_id = map.cluster_id();
    o.node = self;
    o.listen = me->raft;
    for (const auto& n : map.nodes()) {
        if (n.id != self) o.peers.push_back({n.id, n.raft});
    }
    return o;
}

constexpr auto hand_over_poll = std::chrono::milliseconds(20);

}  // namespace

cluster_node::cluster_node(boost::asio::io_context& io, runtime::cluster_map map,
                           std::uint32_t self, raft_timing timing)
    : _io(io),
      _map(std::move(map)),
      _self(self),
      _timing(timing),
      _network(io, network_options(_map, self)) {}

cluster_node::~cluster_node() { _network.stop(); }

std::vector<std::uint64_t> cluster_node::voters(std::uint32_t group) const {
    const auto ids = _map.voters(group);
    return {ids.begin(), ids.end()};
}

replication::raft_options cluster_node::raft_options(std::uint32_t group) const {
    replication::raft_options o;
    o.node = _self;
    o.voters = voters(group);
    o.election_ms = _timing.election_ms;
    o.heartbeat_ms = _timing.heartbeat_ms;
    o.trailing = _timing.trailing_entries;
    o.seed = runtime::system_random().next();
    return o;
}

void cluster_node::attach(std::uint32_t group, replication::raft_group_log& log,
                          boost::asio::any_io_executor strand) {
    _network.attach(group, log, strand);
    _logs.push_back({group, &log, std::move(strand)});
}

std::size_t cluster_node::groups_led() const {
    auto& metrics = replication::raft_metrics::get();
    std::size_t led = 0;
    for (const auto& h : _logs) {
        if (metrics.of(h.group).role.load(std::memory_order_relaxed) ==
            static_cast<std::uint32_t>(log::role::leader)) {
            ++led;
        }
    }
    return led;
}

void cluster_node::hand_over(std::chrono::milliseconds bound, std::function<void()> done) {
    _stopping = true;
    for (const auto& h : _logs) {
        boost::asio::post(h.strand, [log = h.log] { log->hand_over(); });
    }
    wait_for_hand_over(std::chrono::steady_clock::now() + bound,
                       std::make_shared<std::function<void()>>(std::move(done)));
}

void cluster_node::wait_for_hand_over(std::chrono::steady_clock::time_point until,
                                      std::shared_ptr<std::function<void()>> done) {
    if (groups_led() == 0 || std::chrono::steady_clock::now() >= until) {
        boost::asio::post(_io, [done] { (*done)(); });
        return;
    }
    auto timer = std::make_shared<boost::asio::steady_timer>(_io, hand_over_poll);
    timer->async_wait([this, timer, until, done](boost::system::error_code) {
        wait_for_hand_over(until, done);
    });
}

bool cluster_node::ready() const {
    if (_stopping) return false;
    auto& metrics = replication::raft_metrics::get();
    for (const auto& h : _logs) {
        if (metrics.of(h.group).leader.load(std::memory_order_relaxed) == 0) return false;
    }
    return true;
}

std::string cluster_node::cluster_json() const {
    auto& metrics = replication::raft_metrics::get();
    nlohmann::json groups = nlohmann::json::array();
    for (const auto& h : _logs) {
        const auto& slot = metrics.of(h.group);
        groups.push_back({
            {"group", h.group},
            {"voters", voters(h.group)},
            {"role", log::name(static_cast<log::role>(slot.role.load(std::memory_order_relaxed)))},
            {"term", slot.term.load(std::memory_order_relaxed)},
            {"leader", slot.leader.load(std::memory_order_relaxed)},
            {"commit", slot.commit_index.load(std::memory_order_relaxed)},
            {"applied", slot.applied_index.load(std::memory_order_relaxed)},
        });
    }
    nlohmann::json nodes = nlohmann::json::array();
    for (const auto& n : _map.nodes()) {
        nlohmann::json node{{"node", n.id}, {"http", n.http.text()}};
        if (n.id != _self) node["connected"] = _network.connected(n.id);
        nodes.push_back(std::move(node));
    }
    const nlohmann::json out{{"cluster_id", _map.cluster_id()},
                             {"node", _self},
                             {"ready", ready()},
                             {"groups", std::move(groups)},
                             {"nodes", std::move(nodes)}};
    return out.dump();
}

}  // namespace dstream::cli
