#include "replication/peer_network.h"

#include <atomic>
#include <map>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <string_view>
#include <unordered_map>
#include <utility>

#include <boost/asio/bind_executor.hpp>
#include <boost/asio/co_spawn.hpp>
#include <boost/asio/detached.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/read.hpp>
#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <spdlog/spdlog.h>

#include "base/binary.h"
#include "replication/detail/peer_wire.h"
#include "replication/detail/reconnect_backoff.h"
#include "replication/peer_metrics.h"
#include "replication/raft_group_log.h"

namespace dstream::replication {
namespace {

namespace asio = boost::asio;
using tcp = asio::ip::tcp;
using steady = std::chrono::steady_clock;
using namespace std::chrono_literals;

// Covers the connect and both hellos: a peer that takes longer is not one
// that can keep a Raft group's heartbeats.
constexpr auto greeting_limit = 5s;
constexpr auto ping_interval = 1s;
// No byte for this long and the other end is gone (a crash or a cable does
// not always close the socket): the connection closes and the dialer redials.
constexpr auto silence_limit = 5s;
// Read buffers and write batches above this are given back once drained.
constexpr std::size_t kept_buffer_bytes = 1u << 20;
constexpr std::size_t read_chunk_bytes = 64u << 10;

std::uint64_t steady_ns() {
    return static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::nanoseconds>(steady::now().time_since_epoch())
            .count());
}

std::string remote_text(const tcp::socket& socket) {
    boost::system::error_code ec;
    const tcp::endpoint ep = socket.remote_endpoint(ec);
    if (ec) return "?";
    return ep.address().to_string() + ":" + std::to_string(ep.port());
}

}  // namespace

class peer_network::state : public std::enable_shared_from_this<state> {
public:
    state(asio::io_context& io, peer_network_options options);

    raft_transport& transport(std::uint32_t group);
    raft_transport& endpoint_of(std::uint32_t group);
    void attach(std::uint32_t group, raft_group_log& log, asio::any_io_executor strand);
    void attach_node(std::function<void(std::string)> receive, asio::any_io_executor executor);
    void start();
    void stop();
    bool connected(std::uint64_t node) const;

private:
    class connection;
    class endpoint final : public raft_transport {
    public:
        endpoint(state& network, std::uint32_t group) : _network(network), _group(group) {}
        void send(std::uint64_t to, std::string_view bytes) override {
            _network.send(to, _group, bytes);
        }
        void send_pieces(std::uint64_t to, std::span<const byte_slice> pieces) override {
            _network.send(to, _group, pieces);
        }

    private:
        state& _network;
        std::uint32_t _group;
    };
    struct attached_log {
        raft_group_log* log = nullptr;
        asio::any_io_executor strand;
    };
    struct peer_link {
        peer_link(asio::io_context& io, peer_address a)
            : address(std::move(a)),
              strand(asio::make_strand(io)),
              metrics(peer_metrics::get().of(address.node)),
              redial(strand) {}
        const peer_address address;
        const asio::any_io_executor strand;  // the dial loop's, and its connections'
        peer_metrics::peer_slot& metrics;
        asio::steady_timer redial;  // on `strand`
        mutable std::mutex mutex;
        std::shared_ptr<connection> live;  // greeted; null while none is up
        bool ever_connected = false;
    };

    void send(std::uint64_t to, std::uint32_t group, std::string_view bytes);
    void send(std::uint64_t to, std::uint32_t group, std::span<const byte_slice> pieces);
    // The live connection a message of `bytes` for `to` goes on; null when it
    // is dropped (counted): no connection up, or past the frame bound.
    std::shared_ptr<connection> route(std::uint64_t to, std::size_t bytes);
    void count_drop(std::uint64_t to);
    void accept_next();
    asio::awaitable<void> dial_loop(peer_link& link);
    // One connection dialed, greeted and run to its end; whether it got through the greeting.
    asio::awaitable<bool> dial_once(peer_link& link, std::shared_ptr<connection> conn);
    asio::awaitable<void> serve_accepted(std::shared_ptr<connection> conn);
    // Why `theirs` may not be the other end of this connection; nothing when
    // it may. `dialed`: the peer this node dialed, 0 on an accepted one.
    std::optional<std::string> refusal(const detail::hello& theirs, std::uint64_t dialed) const;
    // Makes `conn` the live connection with `link`'s node, replacing any other.
    void install(peer_link& link, const std::shared_ptr<connection>& conn);
    void retire(peer_link& link, const connection& conn);
    void deliver(std::uint32_t group, std::string bytes);
    void deliver(std::uint32_t group, received_message message);

    asio::io_context& _io;
    const peer_network_options _options;
    // Made at construction, never changed: looked up without a lock.
    std::map<std::uint64_t, std::unique_ptr<peer_link>> _links;
    // Made before start(), read without a lock after it.
    std::unordered_map<std::uint32_t, attached_log> _logs;
    std::function<void(std::string)> _node_receive;
    asio::any_io_executor _node_executor;
    std::mutex _endpoints_mutex;
    std::map<std::uint32_t, std::unique_ptr<endpoint>> _endpoints;
    std::atomic<bool> _started{false};
    std::atomic<bool> _stopped{false};
    tcp::endpoint _source;  // this node's address, port 0
    // Every call on the acceptor holds it, so stop() closes it at once, from
    // any thread, and a new network can bind the address right after.
    std::mutex _listener_mutex;
    tcp::acceptor _acceptor;
};

// One TCP connection with a peer, on a strand of its own. Reads run as a
// coroutine; writes are started by whichever sender finds none in flight and
// go on from the strand until the queue is empty.
class peer_network::state::connection : public std::enable_shared_from_this<connection> {
public:
    connection(std::shared_ptr<state> network, tcp::socket socket)
        : _network(std::move(network)),
          _strand(socket.get_executor()),
          _socket(std::move(socket)),
          _deadline(_strand),
          _ticker(_strand) {}

    tcp::socket& socket() { return _socket; }
    const asio::any_io_executor& strand() const { return _strand; }

    // The connect and the hellos must end within greeting_limit, or the
    // socket closes. On the strand, as is everything up to enqueue().
    void arm_deadline();
    // Sends this node's hello and reads the other end's; theirs, or nothing
    // when it is no hello of this protocol (warned) or the socket failed.
    asio::awaitable<std::optional<detail::hello>> greet();
    // The other end is `slot`'s node: the deadline is off, counts go there.
    void greeted(peer_metrics::peer_slot& slot);
    // Reads frames until the connection ends, pinging all the while.
    asio::awaitable<void> run();

    // Queues a frame; false when it is dropped (closed, or the queue full).
    // Any thread. A frame of shared pieces is sent from their memory.
    bool enqueue(std::uint32_t group, std::string_view payload);
    bool enqueue(std::uint32_t group, std::span<const byte_slice> pieces);
    // Any thread.
    void close() {
        asio::post(_strand, [self = shared_from_this()] { self->shut(); });
    }
    // On the strand.
    void shut();
    bool closed() {
        const std::lock_guard lock(_mutex);
        return _closed;
    }

private:
    // Under _mutex: whether a frame of `bytes` fits (the queue's bound), and
    // counts it; true when a write must start.
    bool admit(std::uint32_t group, std::size_t bytes, bool& start);
    // Under _mutex: the bytes copied so far become a piece of the queue.
    void seal_copied();
    void write_queued();
    void written(const boost::system::error_code& ec, std::size_t bytes);
    asio::awaitable<void> keep_alive();
    // Every whole frame in the read buffer; false on a frame too long. A
    // frame longer than a read chunk that is not whole yet moves to a
    // buffer of its own (`_long`), which the reads then fill.
    bool take_frames();
    void on_frame(std::uint32_t group, std::string_view payload);

    std::shared_ptr<state> _network;
    asio::any_io_executor _strand;
    tcp::socket _socket;
    asio::steady_timer _deadline;  // the greeting's
    asio::steady_timer _ticker;    // the pings'
    bool _greeted = false;
    peer_metrics::peer_slot* _metrics = nullptr;
    std::string _remote;
    steady::time_point _last_heard = steady::now();

    // The read buffer: bytes [0, _in_used) read and not yet taken.
    std::vector<char> _in;
    std::size_t _in_used = 0;
    // A long frame's payload, read in place and handed on whole (no copy of
    // a 32 MiB entry between the socket and its group's log): bytes [0,
    // _long_used) read.
    std::optional<received_message> _long;
    std::size_t _long_used = 0;
    std::uint32_t _long_group = 0;

    std::mutex _mutex;
    // Guarded by _mutex: the frames waiting for the next write, in order:
    // pieces, after which come the frames copied into `_copied`. A frame of
    // shared pieces seals what was copied before it into a piece, then adds
    // its header and its pieces.
    std::vector<byte_slice> _queued;
    std::string _copied;
    std::uint64_t _queued_messages = 0;
    std::size_t _unsent_bytes = 0;  // queued and being written: what the bound counts
    bool _writing = false;
    bool _closed = false;
    // The write in flight; on the strand.
    std::vector<byte_slice> _out;
    std::vector<asio::const_buffer> _out_buffers;
    std::size_t _out_bytes = 0;
    std::uint64_t _out_messages = 0;
};

void peer_network::state::connection::arm_deadline() {
    _deadline.expires_after(greeting_limit);
    _deadline.async_wait([self = shared_from_this()](const boost::system::error_code& ec) {
        if (!ec && !self->_greeted) self->shut();
    });
}

asio::awaitable<std::optional<detail::hello>> peer_network::state::connection::greet() {
    _remote = remote_text(_socket);
    boost::system::error_code ec;
    const std::string mine =
        detail::encode_hello({_network->_options.node, _network->_options.cluster_id});
    co_await asio::async_write(_socket, asio::buffer(mine),
                               asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return std::nullopt;
    std::string prefix_bytes(detail::hello_prefix_bytes, '\0');
    co_await asio::async_read(_socket, asio::buffer(prefix_bytes),
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return std::nullopt;
    const detail::hello_prefix prefix = detail::decode_hello_prefix(prefix_bytes);
    if (prefix.magic != detail::peer_magic) {
        spdlog::warn("peer network: {} is not a dstream peer (magic {:#010x}): closed", _remote,
                     prefix.magic);
        co_return std::nullopt;
    }
    if (prefix.version != detail::peer_protocol_version) {
        spdlog::warn("peer network: {} speaks peer protocol version {}, this node {}: closed",
                     _remote, prefix.version, detail::peer_protocol_version);
        co_return std::nullopt;
    }
    std::string body(prefix.body_bytes, '\0');
    co_await asio::async_read(_socket, asio::buffer(body),
                              asio::redirect_error(asio::use_awaitable, ec));
    if (ec) co_return std::nullopt;
    std::optional<detail::hello> theirs = detail::decode_hello_body(body);
    if (!theirs) spdlog::warn("peer network: {} sent a malformed hello: closed", _remote);
    co_return theirs;
}

void peer_network::state::connection::greeted(peer_metrics::peer_slot& slot) {
    _greeted = true;
    _deadline.cancel();
    _metrics = &slot;
    _last_heard = steady::now();
}

asio::awaitable<void> peer_network::state::connection::run() {
    asio::co_spawn(
        _strand, [self = shared_from_this()]() { return self->keep_alive(); }, asio::detached);
    boost::system::error_code ec;
    while (take_frames()) {
        std::size_t n = 0;
        if (_long) {
            n = co_await _socket.async_read_some(
                asio::buffer(_long->data() + _long_used, _long->size() - _long_used),
                asio::redirect_error(asio::use_awaitable, ec));
            _long_used += n;
        } else {
            if (_in.size() - _in_used < read_chunk_bytes) _in.resize(_in_used + read_chunk_bytes);
            n = co_await _socket.async_read_some(
                asio::buffer(_in.data() + _in_used, _in.size() - _in_used),
                asio::redirect_error(asio::use_awaitable, ec));
            _in_used += n;
        }
        if (ec) break;
        _last_heard = steady::now();
        _metrics->received_bytes.inc(n);
        if (_long && _long_used == _long->size()) {
            _metrics->received_messages.inc();
            _network->deliver(_long_group, std::move(*_long));
            _long.reset();
            _long_used = 0;
        }
    }
    shut();
}

bool peer_network::state::connection::take_frames() {
    std::size_t at = 0;
    while (_in_used - at >= detail::frame_header_bytes) {
        const detail::frame_header h = detail::decode_frame_header(
            std::string_view(_in.data() + at, detail::frame_header_bytes));
        if (h.length > detail::max_frame_bytes) {
            spdlog::warn("peer network: {} sent a frame of {} bytes (at most {}): closed", _remote,
                         h.length, detail::max_frame_bytes);
            return false;
        }
        const std::size_t whole = detail::frame_header_bytes + h.length;
        if (_in_used - at < whole) {
            if (whole > read_chunk_bytes && !detail::is_reserved_group(h.group)) {
                const std::size_t have = _in_used - at - detail::frame_header_bytes;
                _long.emplace(h.length);
                std::copy_n(_in.data() + at + detail::frame_header_bytes, have, _long->data());
                _long_used = have;
                _long_group = h.group;
                at = _in_used;
            } else if (_in.size() < whole) {
                _in.resize(whole);  // the rest at once, not a read chunk at a time
            }
            break;
        }
        on_frame(h.group,
                 std::string_view(_in.data() + at + detail::frame_header_bytes, h.length));
        at += whole;
    }
    if (at > 0) {
        std::copy(_in.begin() + static_cast<std::ptrdiff_t>(at),
                  _in.begin() + static_cast<std::ptrdiff_t>(_in_used), _in.begin());
        _in_used -= at;
        if (_in_used == 0 && _in.size() > kept_buffer_bytes) {
            std::vector<char>(read_chunk_bytes).swap(_in);
        }
    }
    return true;
}

void peer_network::state::connection::on_frame(std::uint32_t group, std::string_view payload) {
    if (group == detail::ping_group) {
        enqueue(detail::pong_group, payload);
        return;
    }
    if (group == detail::pong_group) {
        binary_reader in(payload);
        std::uint64_t sent_ns = 0;
        if (in.get_u64(sent_ns)) {
            const std::uint64_t now = steady_ns();
            if (now >= sent_ns) {
                _metrics->rtt_us.store((now - sent_ns) / 1000, std::memory_order_relaxed);
            }
        }
        return;
    }
    _metrics->received_messages.inc();
    _network->deliver(group, std::string(payload));
}

asio::awaitable<void> peer_network::state::connection::keep_alive() {
    boost::system::error_code ec;
    for (;;) {
        _ticker.expires_after(ping_interval);
        co_await _ticker.async_wait(asio::redirect_error(asio::use_awaitable, ec));
        if (ec || !_socket.is_open()) co_return;
        if (steady::now() - _last_heard > silence_limit) {
            spdlog::warn("peer network: nothing from {} for {} s: closed", _remote,
                         std::chrono::duration_cast<std::chrono::seconds>(silence_limit).count());
            shut();
            co_return;
        }
        binary_writer ping;
        ping.put_u64(steady_ns());
        enqueue(detail::ping_group, std::move(ping).take());
    }
}

bool peer_network::state::connection::admit(std::uint32_t group, std::size_t bytes,
                                            bool& start) {
    const std::size_t frame_bytes = detail::frame_header_bytes + bytes;
    if (_closed || _unsent_bytes + frame_bytes > _network->_options.max_queued_bytes) return false;
    _unsent_bytes += frame_bytes;
    if (!detail::is_reserved_group(group)) ++_queued_messages;
    start = !std::exchange(_writing, true);
    return true;
}

void peer_network::state::connection::seal_copied() {
    if (_copied.empty()) return;
    _queued.push_back(byte_slice::owning(std::exchange(_copied, {})));
}

bool peer_network::state::connection::enqueue(std::uint32_t group, std::string_view payload) {
    bool start = false;
    {
        const std::lock_guard lock(_mutex);
        if (!admit(group, payload.size(), start)) return false;
        detail::append_frame(_copied, group, payload);
    }
    if (start) asio::post(_strand, [self = shared_from_this()] { self->write_queued(); });
    return true;
}

bool peer_network::state::connection::enqueue(std::uint32_t group,
                                              std::span<const byte_slice> pieces) {
    std::size_t bytes = 0;
    for (const auto& p : pieces) bytes += p.size;
    bool start = false;
    {
        const std::lock_guard lock(_mutex);
        if (!admit(group, bytes, start)) return false;
        detail::append_frame_header(_copied, group, static_cast<std::uint32_t>(bytes));
        seal_copied();
        _queued.insert(_queued.end(), pieces.begin(), pieces.end());
    }
    if (start) asio::post(_strand, [self = shared_from_this()] { self->write_queued(); });
    return true;
}

void peer_network::state::connection::write_queued() {
    {
        const std::lock_guard lock(_mutex);
        seal_copied();
        if (_closed || _queued.empty()) {
            _writing = false;
            return;
        }
        std::swap(_queued, _out);
        _out_messages = std::exchange(_queued_messages, 0);
    }
    _out_buffers.clear();
    _out_bytes = 0;
    for (const auto& p : _out) {
        _out_buffers.emplace_back(p.data, p.size);
        _out_bytes += p.size;
    }
    // Every frame queued so far, in one write: the batch.
    asio::async_write(_socket, _out_buffers,
                      asio::bind_executor(_strand, [self = shared_from_this()](
                                                       const boost::system::error_code& ec,
                                                       std::size_t bytes) {
                          self->written(ec, bytes);
                      }));
}

void peer_network::state::connection::written(const boost::system::error_code& ec,
                                              std::size_t bytes) {
    _metrics->writes.inc();
    _metrics->sent_bytes.inc(bytes);
    if (ec) {
        shut();
        return;
    }
    _metrics->sent_messages.inc(_out_messages);
    {
        const std::lock_guard lock(_mutex);
        _unsent_bytes -= _out_bytes;
    }
    _out.clear();
    write_queued();
}

void peer_network::state::connection::shut() {
    {
        const std::lock_guard lock(_mutex);
        _closed = true;
        _writing = false;
        _queued.clear();
        _copied.clear();
    }
    boost::system::error_code ignored;
    _socket.shutdown(tcp::socket::shutdown_both, ignored);
    _socket.close(ignored);
    _deadline.cancel();
    _ticker.cancel();
}

peer_network::state::state(asio::io_context& io, peer_network_options options)
    : _io(io), _options(std::move(options)), _acceptor(io) {
    if (_options.cluster_id.size() > detail::max_cluster_id_bytes) {
        throw std::invalid_argument("peer network: the cluster id is longer than " +
                                    std::to_string(detail::max_cluster_id_bytes) + " bytes");
    }
    for (const peer_address& p : _options.peers) {
        if (p.node == _options.node || _links.contains(p.node)) {
            throw std::invalid_argument("peer network: node " + std::to_string(p.node) +
                                        " is this node or named twice");
        }
        _links.emplace(p.node, std::make_unique<peer_link>(io, p));
    }
}

raft_transport& peer_network::state::transport(std::uint32_t group) {
    if (group >= detail::node_group) {
        throw std::invalid_argument("peer network: group " + std::to_string(group) +
                                    " is reserved");
    }
    return endpoint_of(group);
}

raft_transport& peer_network::state::endpoint_of(std::uint32_t group) {
    const std::lock_guard lock(_endpoints_mutex);
    auto& slot = _endpoints[group];
    if (!slot) slot = std::make_unique<endpoint>(*this, group);
    return *slot;
}

void peer_network::state::attach(std::uint32_t group, raft_group_log& log,
                                 asio::any_io_executor strand) {
    if (_started) throw std::logic_error("peer network: attach() after start()");
    _logs[group] = attached_log{&log, std::move(strand)};
}

void peer_network::state::start() {
    if (_started.exchange(true)) return;
    const runtime::host_port& listen = _options.listen;
    boost::system::error_code ec;
    tcp::resolver resolver(_io);
    const auto found = resolver.resolve(listen.host, std::to_string(listen.port),
                                        tcp::resolver::passive, ec);
    if (ec || found.empty()) {
        throw std::runtime_error("peer network: cannot resolve " + listen.text() + ": " +
                                 ec.message());
    }
    const tcp::endpoint at = found.begin()->endpoint();
    _source = tcp::endpoint(at.address(), 0);
    {
        const std::lock_guard lock(_listener_mutex);
        _acceptor.open(at.protocol(), ec);
        // A restarted node takes its address back while old connections linger in TIME_WAIT.
        if (!ec) _acceptor.set_option(tcp::acceptor::reuse_address(true), ec);
        if (!ec) _acceptor.bind(at, ec);
        if (!ec) _acceptor.listen(asio::socket_base::max_listen_connections, ec);
        if (ec) {
            boost::system::error_code ignored;
            _acceptor.close(ignored);
            throw std::runtime_error("peer network: cannot listen on " + listen.text() + ": " +
                                     ec.message());
        }
    }
    accept_next();
    for (auto& [node, link] : _links) {
        if (node < _options.node) continue;  // the lower id dials
        asio::co_spawn(
            link->strand,
            [self = shared_from_this(), l = link.get()] { return self->dial_loop(*l); },
            asio::detached);
    }
}

void peer_network::state::stop() {
    if (_stopped.exchange(true)) return;
    {
        const std::lock_guard lock(_listener_mutex);
        boost::system::error_code ignored;
        _acceptor.close(ignored);
    }
    for (auto& [node, link] : _links) {
        std::shared_ptr<connection> live;
        {
            const std::lock_guard lock(link->mutex);
            live = std::move(link->live);
        }
        if (live) {
            link->metrics.connected.add(-1);
            live->close();
        }
        asio::post(link->strand, [l = link.get(), self = shared_from_this()] { l->redial.cancel(); });
    }
}

bool peer_network::state::connected(std::uint64_t node) const {
    const auto it = _links.find(node);
    if (it == _links.end()) return false;
    const std::lock_guard lock(it->second->mutex);
    return it->second->live != nullptr;
}

std::shared_ptr<peer_network::state::connection> peer_network::state::route(std::uint64_t to,
                                                                            std::size_t bytes) {
    const auto it = _links.find(to);
    if (it == _links.end()) return nullptr;  // no peer of this node: the placement names none such
    peer_link& link = *it->second;
    if (bytes > detail::max_frame_bytes) {
        // The peer would close the connection on it, and Raft would send it again.
        spdlog::warn("peer network: a message of {} bytes for node {} is past the frame bound "
                     "({}): dropped", bytes, to, detail::max_frame_bytes);
        link.metrics.dropped_messages.inc();
        return nullptr;
    }
    std::shared_ptr<connection> live;
    if (!_stopped.load(std::memory_order_relaxed)) {
        const std::lock_guard lock(link.mutex);
        live = link.live;
    }
    if (!live) link.metrics.dropped_messages.inc();
    return live;
}

void peer_network::state::count_drop(std::uint64_t to) {
    _links.at(to)->metrics.dropped_messages.inc();
}

void peer_network::state::send(std::uint64_t to, std::uint32_t group, std::string_view bytes) {
    const auto live = route(to, bytes.size());
    if (live && !live->enqueue(group, bytes)) count_drop(to);
}

void peer_network::state::send(std::uint64_t to, std::uint32_t group,
                               std::span<const byte_slice> pieces) {
    std::size_t bytes = 0;
    for (const auto& p : pieces) bytes += p.size;
    const auto live = route(to, bytes);
    if (live && !live->enqueue(group, pieces)) count_drop(to);
}

void peer_network::state::accept_next() {
    const std::lock_guard lock(_listener_mutex);
    if (!_acceptor.is_open()) return;
    _acceptor.async_accept(
        asio::any_io_executor(asio::make_strand(_io)),
        [self = shared_from_this()](const boost::system::error_code& ec, tcp::socket socket) {
            if (ec == asio::error::operation_aborted || self->_stopped) return;
            if (ec) {
                spdlog::warn("peer network: accept failed: {}", ec.message());
            } else {
                auto conn = std::make_shared<connection>(self, std::move(socket));
                asio::co_spawn(
                    conn->strand(),
                    [self, conn] { return self->serve_accepted(conn); }, asio::detached);
            }
            self->accept_next();
        });
}

asio::awaitable<void> peer_network::state::serve_accepted(std::shared_ptr<connection> conn) {
    conn->arm_deadline();
    boost::system::error_code ignored;
    conn->socket().set_option(tcp::no_delay(true), ignored);
    const std::optional<detail::hello> theirs = co_await conn->greet();
    if (!theirs) {
        conn->shut();
        co_return;
    }
    if (const auto why = refusal(*theirs, 0)) {
        spdlog::warn("peer network: refused {}: {}", remote_text(conn->socket()), *why);
        conn->shut();
        co_return;
    }
    peer_link& link = *_links.at(theirs->node);
    conn->greeted(link.metrics);
    install(link, conn);
    co_await conn->run();
    retire(link, *conn);
}

asio::awaitable<void> peer_network::state::dial_loop(peer_link& link) {
    detail::reconnect_backoff backoff(_options.reconnect_min, _options.reconnect_max,
                                      runtime::system_random());
    boost::system::error_code ec;
    while (!_stopped) {
        // The link's strand is the connection's: its attempts come one at a time.
        auto conn = std::make_shared<connection>(shared_from_this(), tcp::socket(link.strand));
        const bool got_through = co_await dial_once(link, conn);
        if (got_through) backoff.reset();
        if (_stopped) break;
        link.redial.expires_after(backoff.next());
        co_await link.redial.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

asio::awaitable<bool> peer_network::state::dial_once(peer_link& link,
                                                     std::shared_ptr<connection> conn) {
    conn->arm_deadline();
    const runtime::host_port& target = link.address.raft;
    boost::system::error_code ec;
    tcp::resolver resolver(conn->strand());
    const auto found = co_await resolver.async_resolve(
        target.host, std::to_string(target.port), asio::redirect_error(asio::use_awaitable, ec));
    std::optional<tcp::endpoint> to;
    for (const auto& entry : found) {
        if (entry.endpoint().protocol() == _source.protocol()) {
            to = entry.endpoint();
            break;
        }
    }
    if (ec || !to || conn->closed()) {
        spdlog::debug("peer network: node {} at {} not resolved: {}", link.address.node,
                      target.text(), ec ? ec.message() : "no address of the listener's family");
        conn->shut();
        co_return false;
    }
    tcp::socket& socket = conn->socket();
    socket.open(_source.protocol(), ec);
    if (!ec) socket.bind(_source, ec);
    if (ec) {
        spdlog::warn("peer network: cannot dial from {}: {}", _source.address().to_string(),
                     ec.message());
        conn->shut();
        co_return false;
    }
    co_await socket.async_connect(*to, asio::redirect_error(asio::use_awaitable, ec));
    if (ec) {
        // A peer that is down or starting: the usual case, not worth a warning.
        conn->shut();
        co_return false;
    }
    socket.set_option(tcp::no_delay(true), ec);
    const std::optional<detail::hello> theirs = co_await conn->greet();
    if (!theirs) {
        conn->shut();
        co_return false;
    }
    if (const auto why = refusal(*theirs, link.address.node)) {
        spdlog::warn("peer network: refused {} ({}): {}", target.text(),
                     remote_text(socket), *why);
        conn->shut();
        co_return false;
    }
    conn->greeted(link.metrics);
    install(link, conn);
    co_await conn->run();
    retire(link, *conn);
    co_return true;
}

std::optional<std::string> peer_network::state::refusal(const detail::hello& theirs,
                                                        std::uint64_t dialed) const {
    if (theirs.cluster_id != _options.cluster_id) {
        return "it belongs to cluster \"" + theirs.cluster_id + "\", this node to \"" +
               _options.cluster_id + "\"";
    }
    if (dialed != 0) {
        if (theirs.node != dialed) {
            return "node " + std::to_string(dialed) + "'s address answered as node " +
                   std::to_string(theirs.node);
        }
        return std::nullopt;
    }
    if (!_links.contains(theirs.node)) {
        return "node " + std::to_string(theirs.node) + " is not a peer of this node";
    }
    if (theirs.node > _options.node) {
        return "node " + std::to_string(theirs.node) + " dials node " +
               std::to_string(_options.node) + ", but the lower id dials";
    }
    return std::nullopt;
}

void peer_network::state::install(peer_link& link, const std::shared_ptr<connection>& conn) {
    std::shared_ptr<connection> old;
    {
        const std::lock_guard lock(link.mutex);
        if (_stopped) {
            conn->shut();
            return;
        }
        old = std::exchange(link.live, conn);
        if (!old) link.metrics.connected.add(1);
        if (link.ever_connected) link.metrics.reconnects.inc();
        link.ever_connected = true;
    }
    if (old) old->close();
}

void peer_network::state::retire(peer_link& link, const connection& conn) {
    const std::lock_guard lock(link.mutex);
    if (link.live.get() != &conn) return;
    link.live.reset();
    link.metrics.connected.add(-1);
}

void peer_network::state::attach_node(std::function<void(std::string)> receive,
                                      asio::any_io_executor executor) {
    if (_started) throw std::logic_error("peer network: attach_node() after start()");
    _node_receive = std::move(receive);
    _node_executor = std::move(executor);
}

void peer_network::state::deliver(std::uint32_t group, std::string bytes) {
    if (_stopped.load(std::memory_order_relaxed)) return;
    if (group == detail::node_group) {
        if (!_node_receive) return;
        boost::asio::post(_node_executor,
                          [receive = _node_receive, bytes = std::move(bytes)]() mutable {
                              receive(std::move(bytes));
                          });
        return;
    }
    const auto it = _logs.find(group);
    if (it == _logs.end()) return;  // a group this node does not host
    boost::asio::post(it->second.strand, [log = it->second.log, bytes = std::move(bytes)] {
        log->receive(bytes);
    });
}

void peer_network::state::deliver(std::uint32_t group, received_message message) {
    if (group == detail::node_group) {
        deliver(group, std::string(message.view()));
        return;
    }
    if (_stopped.load(std::memory_order_relaxed)) return;
    const auto it = _logs.find(group);
    if (it == _logs.end()) return;
    boost::asio::post(it->second.strand,
                      [log = it->second.log, message = std::move(message)]() mutable {
                          log->receive(std::move(message));
                      });
}

peer_network::peer_network(asio::io_context& io, peer_network_options options)
    : _state(std::make_shared<state>(io, std::move(options))) {}

peer_network::~peer_network() { _state->stop(); }

raft_transport& peer_network::transport(std::uint32_t group) { return _state->transport(group); }

void peer_network::attach(std::uint32_t group, raft_group_log& log,
                          boost::asio::any_io_executor strand) {
    _state->attach(group, log, std::move(strand));
}

raft_transport& peer_network::node_transport() {
    return _state->endpoint_of(detail::node_group);
}

void peer_network::attach_node(std::function<void(std::string)> receive,
                               boost::asio::any_io_executor executor) {
    _state->attach_node(std::move(receive), std::move(executor));
}

void peer_network::start() { _state->start(); }
void peer_network::stop() { _state->stop(); }
bool peer_network::connected(std::uint64_t node) const { return _state->connected(node); }

}  // namespace dstream::replication
