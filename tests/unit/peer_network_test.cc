// The peer transport over real sockets on 127.0.0.1, with an io_context run
// by two threads: three nodes whose groups elect and commit over it, and
// again once one node's network is replaced; hellos of another cluster,
// magic, version or node refused; a frame past the bound closing the
// connection; a full queue dropping and counting; many senders sharing
// writes.
#include "replication/peer_network.h"

#include <sys/socket.h>
#include <sys/time.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <functional>
#include <future>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/write.hpp>
#include <gtest/gtest.h>

#include "base/binary.h"
#include "metrics/registry.h"
#include "replication/detail/peer_wire.h"
#include "replication/memory_group_disk.h"
#include "replication/peer_metrics.h"
#include "replication/raft_group_log.h"

namespace dstream::replication {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using namespace std::chrono_literals;

constexpr char cluster[] = "peer-test";

std::uint16_t free_port() {
    asio::io_context io;
    tcp::acceptor a(io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    return a.local_endpoint().port();
}

runtime::host_port local(std::uint16_t port) { return {"127.0.0.1", port}; }

bool wait_until(const std::function<bool()>& done, std::chrono::milliseconds limit = 8s) {
    const auto until = std::chrono::steady_clock::now() + limit;
    while (!done()) {
        if (std::chrono::steady_clock::now() > until) return false;
        std::this_thread::sleep_for(5ms);
    }
    return true;
}

// An io_context and the two threads that run it.
class running_io {
public:
    running_io() {
        for (int i = 0; i < 2; ++i) _threads.emplace_back([this] { io.run(); });
    }
    ~running_io() { halt(); }
    void halt() {
        _guard.reset();
        io.stop();
        for (auto& t : _threads) {
            if (t.joinable()) t.join();
        }
    }
    asio::io_context io;

private:
    asio::executor_work_guard<asio::io_context::executor_type> _guard{io.get_executor()};
    std::vector<std::thread> _threads;
};

// The listener of one replica, read by the test's thread.
class recording_listener final : public log::log_listener {
public:
    void committed(const log::committed_entry& e) override {
        const std::lock_guard lock(_mutex);
        _applied.emplace_back(e.bytes);
    }
    void committed_through(std::uint64_t) override {}
    void leadership_changed(const log::leadership& now) override {
        const std::lock_guard lock(_mutex);
        _leadership = now;
    }
    void proposals_lost(std::uint64_t, const error&) override {}
    void install(std::uint64_t, std::uint64_t, std::string_view) override {}

    bool has(const std::string& bytes) const {
        const std::lock_guard lock(_mutex);
        return std::find(_applied.begin(), _applied.end(), bytes) != _applied.end();
    }
    log::leadership leadership() const {
        const std::lock_guard lock(_mutex);
        return _leadership;
    }

private:
    mutable std::mutex _mutex;
    std::vector<std::string> _applied;
    log::leadership _leadership;
};

// What a replica sends with: the network of its node as of now, so that a
// node's network can be replaced under logs that go on.
class switchable_transport final : public raft_transport {
public:
    void send(std::uint64_t to, std::string_view bytes) override {
        const std::lock_guard lock(_mutex);
        if (_to != nullptr) _to->send(to, bytes);
    }
    void send_pieces(std::uint64_t to, std::span<const byte_slice> pieces) override {
        const std::lock_guard lock(_mutex);
        if (pieces.size() > 1) ++pieces_sent;
        if (_to != nullptr) _to->send_pieces(to, pieces);
    }
    void point_at(raft_transport* to) {
        const std::lock_guard lock(_mutex);
        _to = to;
    }

    std::atomic<int> pieces_sent{0};  // messages whose entries went by reference

private:
    std::mutex _mutex;
    raft_transport* _to = nullptr;
};

struct replica {
    asio::any_io_executor strand;
    recording_listener listener;
    switchable_transport transport;
    std::unique_ptr<raft_group_log> log;
};

constexpr std::uint32_t group_count = 4;

// Three nodes, each with a peer_network and a replica of every group.
class PeerNetworkCluster : public ::testing::Test {
protected:
    PeerNetworkCluster() {
        for (std::uint64_t node = 1; node <= 3; ++node) ports.push_back(free_port());
        for (std::uint64_t node = 1; node <= 3; ++node) {
            auto& mine = replicas.emplace_back();
            for (std::uint32_t g = 0; g < group_count; ++g) {
                auto r = std::make_unique<replica>();
                r->strand = asio::make_strand(run.io);
                raft_group_log::setup s;
                s.group = g;
                s.raft.node = node;
                s.raft.voters = {1, 2, 3};
                s.raft.election_ms = 300;
                s.raft.heartbeat_ms = 50;
                s.raft.seed = node * 7919 + g;
                s.strand = r->strand;
                s.io = run.io.get_executor();
                r->log = std::make_unique<raft_group_log>(
                    std::move(s), std::make_unique<memory_group_disk>(r->strand), r->transport);
                r->log->attach(r->listener);
                mine.push_back(std::move(r));
            }
        }
        networks.resize(3);
        for (std::uint64_t node = 1; node <= 3; ++node) start_network(node);
        for (auto& mine : replicas) {
            for (auto& r : mine) asio::post(r->strand, [&r] { r->log->start(); });
        }
    }
    ~PeerNetworkCluster() override {
        for (std::uint64_t node = 1; node <= 3; ++node) stop_network(node);
        for (auto& mine : replicas) {
            for (auto& r : mine) {
                std::promise<void> stopped;
                asio::post(r->strand, [&] {
                    r->log->stop();
                    stopped.set_value();
                });
                stopped.get_future().wait_for(5s);
            }
        }
        run.halt();
    }

    peer_network_options options_of(std::uint64_t node) const {
        peer_network_options o;
        o.cluster_id = cluster;
        o.node = node;
        o.listen = local(ports[node - 1]);
        for (std::uint64_t other = 1; other <= 3; ++other) {
            if (other != node) o.peers.push_back({other, local(ports[other - 1])});
        }
        return o;
    }
    void start_network(std::uint64_t node) {
        auto& n = networks[node - 1];
        n = std::make_unique<peer_network>(run.io, options_of(node));
        for (std::uint32_t g = 0; g < group_count; ++g) {
            replica& r = *replicas[node - 1][g];
            n->attach(g, *r.log, r.strand);
            r.transport.point_at(&n->transport(g));
        }
        n->start();
    }
    void stop_network(std::uint64_t node) {
        for (auto& r : replicas[node - 1]) r->transport.point_at(nullptr);
        networks[node - 1].reset();
    }

    // The replica of `group` that leads in the newest term any replica knows.
    replica* leader(std::uint32_t group) {
        replica* found = nullptr;
        std::uint64_t term = 0;
        for (auto& mine : replicas) {
            const log::leadership l = mine[group]->listener.leadership();
            if (l.term > term) {
                term = l.term;
                found = l.leads() ? mine[group].get() : nullptr;
            } else if (l.term == term && l.leads()) {
                found = mine[group].get();
            }
        }
        return found;
    }
    std::optional<log::proposal> propose(replica& r, std::string bytes) {
        auto done = std::make_shared<std::promise<log::proposal>>();
        auto answer = done->get_future();
        asio::post(r.strand, [&r, done, bytes = std::move(bytes)]() mutable {
            done->set_value(r.log->propose(std::move(bytes)));
        });
        if (answer.wait_for(5s) != std::future_status::ready) return std::nullopt;
        return answer.get();
    }
    // Proposes `bytes` on the group's leader, again on a new one if the
    // leadership moves, until all three replicas have applied it.
    bool commit_everywhere(std::uint32_t group, const std::string& bytes) {
        const auto everywhere = [&] {
            for (auto& mine : replicas) {
                if (!mine[group]->listener.has(bytes)) return false;
            }
            return true;
        };
        const auto until = std::chrono::steady_clock::now() + 8s;
        while (std::chrono::steady_clock::now() < until) {
            replica* l = nullptr;
            if (!wait_until([&] { return (l = leader(group)) != nullptr; }, 2s)) continue;
            const auto p = propose(*l, bytes);
            if (!p || p->what != log::proposal::outcome::accepted) continue;
            if (wait_until(everywhere, 3s)) return true;
        }
        return false;
    }
    bool all_connected() const {
        for (std::uint64_t a = 1; a <= 3; ++a) {
            for (std::uint64_t b = 1; b <= 3; ++b) {
                if (a != b && !networks[a - 1]->connected(b)) return false;
            }
        }
        return true;
    }

    running_io run;
    std::vector<std::uint16_t> ports;
    std::vector<std::vector<std::unique_ptr<replica>>> replicas;
    std::vector<std::unique_ptr<peer_network>> networks;
};

TEST_F(PeerNetworkCluster, EveryGroupElectsAndCommitsOnAllThreeNodes) {
    ASSERT_TRUE(wait_until([&] { return all_connected(); }));
    for (std::uint32_t g = 0; g < group_count; ++g) {
        EXPECT_TRUE(commit_everywhere(g, "first in group " + std::to_string(g))) << "group " << g;
    }
}

// An entry past raft_options::reference_bytes leaves in pieces that share
// the log's bytes, and a frame longer than a read chunk is read into memory
// of its own and decoded in place (received_message): both reach every
// replica whole, interleaved with short entries.
TEST_F(PeerNetworkCluster, LongEntriesLeaveByReferenceAndArriveWhole) {
    ASSERT_TRUE(wait_until([&] { return all_connected(); }));
    std::string long_entry(5u << 20, '\0');
    for (std::size_t i = 0; i < long_entry.size(); ++i) {
        long_entry[i] = static_cast<char>((i * 2654435761u) >> 13);
    }
    ASSERT_TRUE(commit_everywhere(1, "short before"));
    ASSERT_TRUE(commit_everywhere(1, long_entry));
    ASSERT_TRUE(commit_everywhere(1, "short after"));
    std::string second = long_entry;
    second.back() = static_cast<char>(second.back() + 1);
    ASSERT_TRUE(commit_everywhere(1, second));
    int by_reference = 0;
    for (auto& mine : replicas) by_reference += mine[1]->transport.pieces_sent;
    EXPECT_GE(by_reference, 2);
}

TEST_F(PeerNetworkCluster, ANodeWhoseNetworkIsReplacedIsReconnectedAndCommitsAgain) {
    ASSERT_TRUE(wait_until([&] { return all_connected(); }));
    ASSERT_TRUE(commit_everywhere(0, "before"));
    stop_network(2);
    ASSERT_TRUE(wait_until([&] { return !networks[0]->connected(2) && !networks[2]->connected(2); }));
    start_network(2);
    // Node 1 redials node 2; node 2's new network dials node 3.
    ASSERT_TRUE(wait_until([&] { return all_connected(); }));
    for (std::uint32_t g = 0; g < group_count; ++g) {
        EXPECT_TRUE(commit_everywhere(g, "after in group " + std::to_string(g))) << "group " << g;
    }
}

// A blocking socket of the test's own, that gives up a read after a few seconds.
class raw_peer {
public:
    explicit raw_peer(tcp::socket s) : _socket(std::move(s)) {
        timeval limit{5, 0};
        ::setsockopt(_socket.native_handle(), SOL_SOCKET, SO_RCVTIMEO, &limit, sizeof limit);
    }
    static raw_peer dial(asio::io_context& io, std::uint16_t port) {
        tcp::socket s(io);
        s.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port));
        return raw_peer(std::move(s));
    }
    void write(const std::string& bytes) { asio::write(_socket, asio::buffer(bytes)); }
    // The other end's hello, read whole.
    std::optional<detail::hello> read_hello() {
        std::string prefix(detail::hello_prefix_bytes, '\0');
        boost::system::error_code ec;
        asio::read(_socket, asio::buffer(prefix), ec);
        if (ec) return std::nullopt;
        std::string body(detail::decode_hello_prefix(prefix).body_bytes, '\0');
        asio::read(_socket, asio::buffer(body), ec);
        if (ec) return std::nullopt;
        return detail::decode_hello_body(body);
    }
    // Whether the other end closes (rather than the read timing out).
    bool closed_by_other_end() {
        char sink[4096];
        for (;;) {
            boost::system::error_code ec;
            _socket.read_some(asio::buffer(sink), ec);
            if (ec == asio::error::eof || ec == asio::error::connection_reset) return true;
            if (ec) return false;
        }
    }

private:
    tcp::socket _socket;
};

std::string hello_with(std::uint32_t magic, std::uint32_t version, std::uint64_t node,
                       const std::string& cluster_id) {
    std::string bytes = detail::encode_hello({node, cluster_id});
    binary_writer prefix;
    prefix.put_u32(magic);
    prefix.put_u32(version);
    return std::move(prefix).take() + bytes.substr(8);
}

TEST(PeerNetwork, HellosOfAnotherClusterMagicVersionOrNodeAreRefused) {
    running_io run;
    const std::uint16_t p11 = free_port(), p12 = free_port(), p13 = free_port();
    const auto options = [&](std::uint64_t node, std::string id, std::uint16_t port) {
        peer_network_options o;
        o.cluster_id = std::move(id);
        o.node = node;
        o.listen = local(port);
        o.peers = {{11, local(p11)}, {12, local(p12)}, {13, local(p13)}};
        std::erase_if(o.peers, [&](const peer_address& p) { return p.node == node; });
        return o;
    };
    peer_network n11(run.io, options(11, cluster, p11));
    peer_network n12(run.io, options(12, cluster, p12));
    peer_network n13(run.io, options(13, "another-cluster", p13));
    n11.start();
    n12.start();
    n13.start();
    ASSERT_TRUE(wait_until([&] { return n11.connected(12) && n12.connected(11); }));
    // Long enough for several of node 11's and 12's attempts to dial node 13.
    const bool ever = !wait_until(
        [&] { return n11.connected(13) || n12.connected(13) || n13.connected(11) ||
                     n13.connected(12); },
        700ms);
    EXPECT_TRUE(ever);

    const auto refused = [&](const std::string& hello) {
        raw_peer raw = raw_peer::dial(run.io, p12);
        raw.write(hello);
        return raw.read_hello().has_value() && raw.closed_by_other_end();
    };
    using detail::peer_magic, detail::peer_protocol_version;
    EXPECT_TRUE(refused(hello_with(0x50545448, peer_protocol_version, 11, cluster)));  // "HTTP"
    EXPECT_TRUE(refused(hello_with(peer_magic, peer_protocol_version + 1, 11, cluster)));
    EXPECT_TRUE(refused(hello_with(peer_magic, peer_protocol_version, 99, cluster)));
    EXPECT_TRUE(refused(hello_with(peer_magic, peer_protocol_version, 11, "another-cluster")));
    // The higher id of a pair never dials the lower.
    EXPECT_TRUE(refused(hello_with(peer_magic, peer_protocol_version, 13, cluster)));
    EXPECT_TRUE(n11.connected(12));
}

TEST(PeerNetwork, AFramePastTheBoundClosesTheConnection) {
    running_io run;
    const std::uint16_t port = free_port();
    peer_network_options o;
    o.cluster_id = cluster;
    o.node = 22;
    o.listen = local(port);
    o.peers = {{21, local(free_port())}};
    peer_network n22(run.io, o);
    n22.start();

    raw_peer raw = raw_peer::dial(run.io, port);
    raw.write(detail::encode_hello({21, cluster}));
    const auto theirs = raw.read_hello();
    ASSERT_TRUE(theirs.has_value());
    EXPECT_EQ(theirs->node, 22u);
    ASSERT_TRUE(wait_until([&] { return n22.connected(21); }));
    binary_writer header;
    header.put_u32(0);
    header.put_u32(detail::max_frame_bytes + 1);
    raw.write(std::move(header).take());
    EXPECT_TRUE(raw.closed_by_other_end());
    EXPECT_TRUE(wait_until([&] { return !n22.connected(21); }));
}

TEST(PeerNetwork, MessagesWithNoConnectionOrPastTheQueueBoundAreDroppedAndCounted) {
    running_io run;
    // Node 32 is the test's own socket: it greets, then never reads.
    tcp::acceptor listener(run.io, tcp::endpoint(asio::ip::make_address("127.0.0.1"), 0));
    peer_network_options o;
    o.cluster_id = cluster;
    o.node = 31;
    o.listen = local(free_port());
    o.peers = {{32, local(listener.local_endpoint().port())}};
    o.max_queued_bytes = 1u << 20;
    peer_network n31(run.io, o);
    auto& slot = peer_metrics::get().of(32);
    const std::uint64_t dropped_before = slot.dropped_messages.value();
    n31.start();
    raft_transport& t = n31.transport(0);

    tcp::socket accepted(run.io);
    listener.accept(accepted);
    raw_peer raw(std::move(accepted));
    ASSERT_TRUE(raw.read_hello().has_value());
    t.send(32, "before the hello");  // no connection up yet
    EXPECT_EQ(slot.dropped_messages.value(), dropped_before + 1);
    raw.write(detail::encode_hello({32, cluster}));
    ASSERT_TRUE(wait_until([&] { return n31.connected(32); }));

    // Far more than the socket buffers and the queue hold.
    const std::string big(256u << 10, 'x');
    for (int i = 0; i < 200; ++i) t.send(32, big);
    EXPECT_GT(slot.dropped_messages.value(), dropped_before + 100);
    EXPECT_TRUE(n31.connected(32));
}

TEST(PeerNetwork, SendsFromManyThreadsShareWritesAndPingsMeasureTheRoundTrip) {
    running_io run;
    const std::uint16_t p41 = free_port(), p42 = free_port();
    peer_network_options o41;
    o41.cluster_id = cluster;
    o41.node = 41;
    o41.listen = local(p41);
    o41.peers = {{42, local(p42)}};
    peer_network_options o42 = o41;
    o42.node = 42;
    o42.listen = local(p42);
    o42.peers = {{41, local(p41)}};
    peer_network n41(run.io, o41);
    peer_network n42(run.io, o42);
    n41.start();
    n42.start();
    ASSERT_TRUE(wait_until([&] { return n41.connected(42) && n42.connected(41); }));

    auto& to42 = peer_metrics::get().of(42);
    auto& from41 = peer_metrics::get().of(41);
    const std::uint64_t sent_before = to42.sent_messages.value();
    const std::uint64_t writes_before = to42.writes.value();
    const std::uint64_t received_before = from41.received_messages.value();
    constexpr int threads = 4, each = 500;
    std::vector<std::thread> senders;
    for (int i = 0; i < threads; ++i) {
        senders.emplace_back([&, i] {
            raft_transport& t = n41.transport(static_cast<std::uint32_t>(i));
            for (int m = 0; m < each; ++m) t.send(42, std::string(100, static_cast<char>('a' + i)));
        });
    }
    for (auto& s : senders) s.join();
    constexpr std::uint64_t total = threads * each;
    ASSERT_TRUE(wait_until([&] { return to42.sent_messages.value() - sent_before == total; }));
    // Node 42 hosts no group: it reads them all and drops them.
    ASSERT_TRUE(wait_until(
        [&] { return from41.received_messages.value() - received_before == total; }));
    EXPECT_LT(to42.writes.value() - writes_before, total);

    ASSERT_TRUE(wait_until([&] { return to42.rtt_us.load() > 0; }, 5s));
    const std::string text = metrics::node_registry().render();
    EXPECT_NE(text.find("dstream_peer_rtt_seconds{peer=\"42\"}"), std::string::npos);
    EXPECT_NE(text.find("dstream_peer_connected{peer=\"41\"} 1"), std::string::npos);
}

TEST(PeerNetwork, NodeChannelMessagesReachTheOtherNodesReceiverBothWays) {
    running_io run;
    const std::uint16_t p1 = free_port(), p2 = free_port();
    const auto options = [&](std::uint64_t node) {
        peer_network_options o;
        o.cluster_id = cluster;
        o.node = node;
        o.listen = local(node == 1 ? p1 : p2);
        o.peers.push_back({node == 1 ? 2u : 1u, local(node == 1 ? p2 : p1)});
        return o;
    };
    peer_network one(run.io, options(1)), two(run.io, options(2));
    std::mutex mutex;
    std::vector<std::string> at_one, at_two;
    one.attach_node([&](std::string m) { std::lock_guard l(mutex); at_one.push_back(std::move(m)); },
                    asio::make_strand(run.io));
    two.attach_node([&](std::string m) { std::lock_guard l(mutex); at_two.push_back(std::move(m)); },
                    asio::make_strand(run.io));
    one.start();
    two.start();
    ASSERT_TRUE(wait_until([&] { return one.connected(2) && two.connected(1); }));
    one.node_transport().send(2, "asked");
    two.node_transport().send(1, "answered");
    ASSERT_TRUE(wait_until([&] {
        std::lock_guard l(mutex);
        return at_one.size() == 1 && at_two.size() == 1;
    }));
    EXPECT_EQ(at_two.front(), "asked");
    EXPECT_EQ(at_one.front(), "answered");
    EXPECT_THROW(one.transport(detail::node_group), std::invalid_argument);
    one.stop();
    two.stop();
}

}  // namespace
}  // namespace dstream::replication
