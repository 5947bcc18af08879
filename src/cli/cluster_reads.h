#pragma once
// A cluster's node asks a replica on another node about a group it holds no
// replica of (more nodes than `replicas`: a fork's source; see
// service/peer_requests.h), and answers its peers' requests about the groups
// it hosts with the engine. Both go on the peer transport's node channel.
#include <cstdint>
#include <memory>
#include <string>
#include <unordered_map>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "cli/cluster_node.h"
#include "service/engine.h"
#include "service/peer_requests.h"

namespace dstream::cli {

class cluster_reads final : public service::peer_reads {
public:
    // Before the cluster's start(): takes the node channel's messages.
    cluster_reads(boost::asio::io_context& io, cluster_node& cluster, service::engine& engine);

    void ask(service::peer_request request,
             unique_function<void(service::peer_answer)> done) override;

private:
    struct waiting {
        unique_function<void(service::peer_answer)> done;
        std::unique_ptr<boost::asio::steady_timer> timer;
    };
    // On the strand: a peer's request or answer.
    void receive(std::string bytes);
    void finish(std::uint64_t id, service::peer_answer answer);
    // A voter of `group` whose connection is up; 0 when none is.
    std::uint64_t replica_to_ask(std::uint32_t group) const;

    boost::asio::io_context& _io;
    cluster_node& _cluster;
    service::engine& _engine;
    boost::asio::strand<boost::asio::io_context::executor_type> _strand;
    std::uint64_t _next_id = 1;
    std::unordered_map<std::uint64_t, waiting> _waiting;
};

}  // namespace dstream::cli
