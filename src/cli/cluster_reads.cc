#include "cli/cluster_reads.h"

#include <chrono>
#include <exception>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/post.hpp>

namespace dstream::cli {
namespace {

namespace asio = boost::asio;

// How long an asker waits for a replica's answer (a read index, then at most
// peer_read_max_bytes), before it answers NO_LEADER.
constexpr std::chrono::seconds answer_within{5};

service::peer_answer refused(std::uint64_t id, std::string why) {
    service::peer_answer a;
    a.id = id;
    a.refusal = make_error(protocol::error_code::no_leader, std::move(why));
    return a;
}

}  // namespace

cluster_reads::cluster_reads(asio::io_context& io, cluster_node& cluster, service::engine& engine)
    : _io(io), _cluster(cluster), _engine(engine), _strand(asio::make_strand(io)) {
    _cluster.network().attach_node([this](std::string bytes) { receive(std::move(bytes)); },
                                   _strand);
}

std::uint64_t cluster_reads::replica_to_ask(std::uint32_t group) const {
    for (const std::uint64_t node : _cluster.voters(group)) {
        if (node != _cluster.self().id && _cluster.network().connected(node)) return node;
    }
    return 0;
}

void cluster_reads::ask(service::peer_request request,
                        unique_function<void(service::peer_answer)> done) {
    asio::post(_strand, [this, request = std::move(request), done = std::move(done)]() mutable {
        const std::uint64_t id = _next_id++;
        const std::uint64_t to = replica_to_ask(request.group);
        if (to == 0) {
            done(refused(id, "no node holding a replica of the group is reachable"));
            return;
        }
        request.id = id;
        request.from = _cluster.self().id;
        auto timer = std::make_unique<asio::steady_timer>(_strand, answer_within);
        timer->async_wait([this, id](boost::system::error_code ec) {
            if (!ec) finish(id, refused(id, "no replica of the group answered in time"));
        });
        _waiting.emplace(id, waiting{std::move(done), std::move(timer)});
        _cluster.network().node_transport().send(to, service::encode(request));
    });
}

void cluster_reads::finish(std::uint64_t id, service::peer_answer answer) {
    const auto it = _waiting.find(id);
    if (it == _waiting.end()) return;  // answered, or past its deadline
    auto done = std::move(it->second.done);
    it->second.timer->cancel();
    _waiting.erase(it);
    done(std::move(answer));
}

void cluster_reads::receive(std::string bytes) {
    service::peer_message m = service::decode_peer_message(bytes);
    if (m.answer) {
        const std::uint64_t id = m.answer->id;
        finish(id, std::move(*m.answer));
        return;
    }
    if (!m.request) return;  // malformed: the asker's wait ends at its deadline
    const std::uint64_t to = m.request->from;
    asio::co_spawn(_io, _engine.answer_peer(std::move(*m.request)),
                   [this, to](std::exception_ptr failed, service::peer_answer answer) {
                       if (failed) return;  // the asker's wait ends at its deadline
                       _cluster.network().node_transport().send(to, service::encode(answer));
                   });
}

}  // namespace dstream::cli
