// fanout-floor: the floor of one SSE delivery on this machine, for
// `bench/compare.sh --scenario fanout --servers fanout-floor,...`; it is to
// SSE what bench/nginx_floor.conf is to appends. One thread, one epoll,
// non-blocking sockets with TCP_NODELAY (as dstream), and no work but the
// bare work of a delivery: the event of an append is built once, and each
// subscriber gets it in one send().
//
//   fanout-floor --listen 127.0.0.1:4437
//
// It answers what `dstream-bench fanout` sends, on one stream whatever the
// path:
//   PUT                  201 with Stream-Next-Offset (the stream's end)
//   GET ...live=sse...   200 text/event-stream, chunked, one control event;
//                        the connection then subscribes until the client
//                        closes it
//   POST                 one chunk holding `event: data` (the body) and
//                        `event: control` (the new end, base protocol 5.8)
//                        goes to every subscriber, then 204 with
//                        Stream-Next-Offset
//   anything else        400, and the connection closes
// A send that would block or is partial leaves the rest in that
// subscriber's buffer, flushed on EPOLLOUT: nothing is dropped. Requests are
// keep-alive with Content-Length bodies, in any split over reads.
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <sys/epoll.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cctype>
#include <cerrno>
#include <charconv>
#include <cstdint>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <string_view>
#include <system_error>
#include <vector>

#include <CLI/CLI.hpp>

namespace dstream::bench {
namespace {

constexpr std::size_t kMaxHeadBytes = 16 * 1024;
constexpr std::size_t kMaxBodyBytes = std::size_t{16} << 20;  // dstream-bench's largest body
constexpr std::size_t kReadBytes = 64 * 1024;

[[noreturn]] void fail(const char* what) {
    throw std::system_error(errno, std::generic_category(), what);
}

bool iequals(std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
        if (std::tolower(static_cast<unsigned char>(a[i])) !=
            std::tolower(static_cast<unsigned char>(b[i]))) {
            return false;
        }
    }
    return true;
}

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

struct request {
    std::string_view method, target, body;
    std::size_t size = 0;  // head and body
};

enum class parse_status { complete, incomplete, bad };

// One request from the front of `bytes`: a head of at most kMaxHeadBytes, a
// body of Content-Length bytes (no Transfer-Encoding: the generator sends
// none).
parse_status parse_request(std::string_view bytes, request& r) {
    const std::size_t head_end = bytes.find("\r\n\r\n");
    if (head_end == std::string_view::npos) {
        return bytes.size() > kMaxHeadBytes ? parse_status::bad : parse_status::incomplete;
    }
    if (head_end > kMaxHeadBytes) return parse_status::bad;
    std::string_view head = bytes.substr(0, head_end + 2);
    const std::size_t line_end = head.find("\r\n");
    const std::string_view line = head.substr(0, line_end);
    const std::size_t sp1 = line.find(' ');
    const std::size_t sp2 = line.find(' ', sp1 + 1);
    if (sp1 == 0 || sp1 == std::string_view::npos || sp2 == std::string_view::npos ||
        !line.substr(sp2 + 1).starts_with("HTTP/1.")) {
        return parse_status::bad;
    }
    r.method = line.substr(0, sp1);
    r.target = line.substr(sp1 + 1, sp2 - sp1 - 1);
    std::size_t length = 0;
    bool has_length = false;
    for (head.remove_prefix(line_end + 2); !head.empty();) {
        const std::size_t end = head.find("\r\n");
        const std::string_view field = head.substr(0, end);
        head.remove_prefix(end + 2);
        const std::size_t colon = field.find(':');
        if (colon == 0 || colon == std::string_view::npos) return parse_status::bad;
        const std::string_view name = field.substr(0, colon);
        const std::string_view value = trim(field.substr(colon + 1));
        if (iequals(name, "Transfer-Encoding")) return parse_status::bad;
        if (!iequals(name, "Content-Length")) continue;
        std::size_t n = 0;
        const auto [at, ec] = std::from_chars(value.data(), value.data() + value.size(), n);
        if (ec != std::errc{} || at != value.data() + value.size() || n > kMaxBodyBytes ||
            (has_length && n != length)) {
            return parse_status::bad;
        }
        length = n;
        has_length = true;
    }
    r.size = head_end + 4 + length;
    if (bytes.size() < r.size) return parse_status::incomplete;
    r.body = bytes.substr(head_end + 4, length);
    return parse_status::complete;
}

// Whether the query has live=sse (the generator's offset=now is implied:
// the floor keeps no history to start from).
bool asks_for_sse(std::string_view target) {
    const std::size_t q = target.find('?');
    if (q == std::string_view::npos) return false;
    std::string_view query = target.substr(q + 1);
    while (!query.empty()) {
        const std::size_t amp = query.find('&');
        if (query.substr(0, amp) == "live=sse") return true;
        if (amp == std::string_view::npos) break;
        query.remove_prefix(amp + 1);
    }
    return false;
}

// The 20-digit wire form of a byte position, as dstream sends it.
void append_offset(std::string& out, std::uint64_t position) {
    char digits[20];
    const auto [end, ec] = std::to_chars(digits, digits + sizeof digits, position);
    out.append(sizeof digits - static_cast<std::size_t>(end - digits), '0').append(digits, end);
}

// An `event: data` with the text, each line its own data line; a leading
// space gets one more, as the reader drops one (the way dstream writes it).
void append_data_event(std::string& out, std::string_view text) {
    out.append("event: data\n");
    std::size_t pos = 0;
    while (true) {
        const std::size_t brk = text.find_first_of("\r\n", pos);
        const std::string_view line = text.substr(pos, brk - pos);
        out.append(line.starts_with(' ') ? "data: " : "data:").append(line).append("\n");
        if (brk == std::string_view::npos) break;
        pos = brk + 1;
        if (text[brk] == '\r' && pos < text.size() && text[pos] == '\n') ++pos;
    }
    out.append("\n");
}

void append_control_event(std::string& out, std::uint64_t next_offset) {
    out.append("event: control\ndata:{\"streamNextOffset\":\"");
    append_offset(out, next_offset);
    out.append("\",\"upToDate\":true}\n\n");
}

// One chunk of the chunked SSE body around `events`.
void append_chunk(std::string& out, std::string_view events) {
    char hex[16];
    const auto [end, ec] = std::to_chars(hex, hex + sizeof hex, events.size(), 16);
    out.append(hex, end).append("\r\n").append(events).append("\r\n");
}

struct connection {
    int fd = -1;
    std::string in;   // bytes read and not yet a whole request
    std::string out;  // what send() could not take yet; EPOLLOUT is armed while non-empty
    bool subscriber = false;
    std::size_t subscriber_index = 0;
    bool closing = false;  // reads no more requests; closes once `out` is flushed
    bool dead = false;     // closed at the end of the event batch
};

class floor_server {
public:
    explicit floor_server(int listen_fd) : listen_(listen_fd), epoll_(::epoll_create1(0)) {
        if (epoll_ < 0) fail("epoll_create1");
        watch(listen_, EPOLLIN, EPOLL_CTL_ADD);
    }

    [[noreturn]] void run() {
        std::array<epoll_event, 512> events{};
        while (true) {
            const int n = ::epoll_wait(epoll_, events.data(), static_cast<int>(events.size()), -1);
            if (n < 0 && errno != EINTR) fail("epoll_wait");
            for (int i = 0; i < n; ++i) {
                const int fd = events[i].data.fd;
                if (fd == listen_) {
                    accept_all();
                    continue;
                }
                connection& c = *by_fd_[fd];
                if (!c.dead && (events[i].events & EPOLLERR)) kill(c);
                if (!c.dead && (events[i].events & EPOLLOUT)) flush(c);
                if (!c.dead && (events[i].events & (EPOLLIN | EPOLLHUP))) on_readable(c);
            }
            reap();
        }
    }

private:
    void watch(int fd, std::uint32_t events, int op) {
        epoll_event ev{};
        ev.events = events;
        ev.data.fd = fd;
        if (::epoll_ctl(epoll_, op, fd, &ev) != 0) fail("epoll_ctl");
    }

    void accept_all() {
        while (true) {
            const int fd = ::accept4(listen_, nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
            if (fd < 0) return;  // EAGAIN: all taken; anything else: the next wake retries
            const int one = 1;
            ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
            if (by_fd_.size() <= static_cast<std::size_t>(fd)) by_fd_.resize(fd + 1);
            by_fd_[fd] = std::make_unique<connection>();
            by_fd_[fd]->fd = fd;
            watch(fd, EPOLLIN, EPOLL_CTL_ADD);
        }
    }

    void on_readable(connection& c) {
        const ssize_t n = ::recv(c.fd, read_buffer_.data(), read_buffer_.size(), 0);
        if (n == 0 || (n < 0 && errno != EAGAIN && errno != EINTR)) {
            kill(c);
            return;
        }
        // A subscriber has nothing more to say; a closing connection is done.
        if (n < 0 || c.subscriber || c.closing) return;
        c.in.append(read_buffer_.data(), static_cast<std::size_t>(n));
        std::size_t used = 0;
        while (!c.subscriber && !c.closing) {
            request r;
            const parse_status s = parse_request(std::string_view(c.in).substr(used), r);
            if (s == parse_status::incomplete) break;
            if (s == parse_status::bad) {
                reject(c);
                break;
            }
            answer(c, r);
            used += r.size;
        }
        c.in.erase(0, used);
    }

    void answer(connection& c, const request& r) {
        reply_.clear();
        if (r.method == "PUT") {
            reply_.append("HTTP/1.1 201 Created\r\nStream-Next-Offset: ");
            append_offset(reply_, next_offset_);
            reply_.append("\r\nContent-Length: 0\r\n\r\n");
        } else if (r.method == "POST") {
            publish(r.body);
            reply_.append("HTTP/1.1 204 No Content\r\nStream-Next-Offset: ");
            append_offset(reply_, next_offset_);
            reply_.append("\r\n\r\n");
        } else if (r.method == "GET" && asks_for_sse(r.target)) {
            reply_.append(
                "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n"
                "Transfer-Encoding: chunked\r\n\r\n");
            events_.clear();
            append_control_event(events_, next_offset_);
            append_chunk(reply_, events_);
            c.subscriber = true;
            c.subscriber_index = subscribers_.size();
            subscribers_.push_back(&c);
        } else {
            reject(c);
            return;
        }
        send_or_keep(c, reply_);
    }

    // The delivery itself: one event built once, one send() per subscriber.
    void publish(std::string_view body) {
        next_offset_ += body.size();
        events_.clear();
        append_data_event(events_, body);
        append_control_event(events_, next_offset_);
        chunk_.clear();
        append_chunk(chunk_, events_);
        for (connection* s : subscribers_) send_or_keep(*s, chunk_);
    }

    void reject(connection& c) {
        c.closing = true;
        send_or_keep(c, "HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
        if (c.out.empty()) kill(c);
    }

    void send_or_keep(connection& c, std::string_view bytes) {
        if (c.dead) return;
        if (!c.out.empty()) {  // behind already: keep the order
            c.out.append(bytes);
            return;
        }
        const ssize_t n = ::send(c.fd, bytes.data(), bytes.size(), MSG_NOSIGNAL);
        if (n < 0 && errno != EAGAIN && errno != EINTR) {
            kill(c);
            return;
        }
        const std::size_t sent = n < 0 ? 0 : static_cast<std::size_t>(n);
        if (sent == bytes.size()) return;
        c.out.assign(bytes.substr(sent));
        watch(c.fd, EPOLLIN | EPOLLOUT, EPOLL_CTL_MOD);
    }

    void flush(connection& c) {
        const ssize_t n = ::send(c.fd, c.out.data(), c.out.size(), MSG_NOSIGNAL);
        if (n < 0) {
            if (errno != EAGAIN && errno != EINTR) kill(c);
            return;
        }
        c.out.erase(0, static_cast<std::size_t>(n));
        if (!c.out.empty()) return;
        if (c.closing) {
            kill(c);
            return;
        }
        watch(c.fd, EPOLLIN, EPOLL_CTL_MOD);
    }

    // Closing waits for the end of the batch, so that no later event of the
    // batch finds a freed connection or a reused descriptor.
    void kill(connection& c) {
        c.dead = true;
        dead_.push_back(c.fd);
    }

    void reap() {
        for (const int fd : dead_) {
            connection& c = *by_fd_[fd];
            if (c.subscriber) {
                connection* last = subscribers_.back();
                subscribers_[c.subscriber_index] = last;
                last->subscriber_index = c.subscriber_index;
                subscribers_.pop_back();
            }
            ::close(fd);  // also leaves the epoll set
            by_fd_[fd].reset();
        }
        dead_.clear();
    }

    const int listen_;
    const int epoll_;
    std::vector<std::unique_ptr<connection>> by_fd_;
    std::vector<connection*> subscribers_;
    std::vector<int> dead_;
    std::uint64_t next_offset_ = 0;  // the one stream's end: bytes appended
    std::array<char, kReadBytes> read_buffer_{};
    std::string reply_, events_, chunk_;  // reused: no allocation per request once grown
};

// HOST:PORT ([HOST]:PORT for IPv6), non-blocking, listening.
int open_listener(const std::string& where) {
    const std::size_t colon = where.rfind(':');
    if (colon == std::string::npos || colon == 0) {
        throw std::runtime_error("--listen takes HOST:PORT, not '" + where + "'");
    }
    std::string host = where.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']') {
        host = host.substr(1, host.size() - 2);
    }
    const std::string port = where.substr(colon + 1);
    addrinfo hints{};
    hints.ai_family = AF_UNSPEC;
    hints.ai_socktype = SOCK_STREAM;
    hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV;
    addrinfo* found = nullptr;
    if (const int rc = ::getaddrinfo(host.c_str(), port.c_str(), &hints, &found); rc != 0) {
        throw std::runtime_error("--listen " + where + ": " + ::gai_strerror(rc));
    }
    const std::unique_ptr<addrinfo, decltype(&::freeaddrinfo)> hold(found, &::freeaddrinfo);
    const int fd = ::socket(found->ai_family, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
    if (fd < 0) fail("socket");
    const int one = 1;
    ::setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (::bind(fd, found->ai_addr, found->ai_addrlen) != 0) fail("bind");
    if (::listen(fd, SOMAXCONN) != 0) fail("listen");
    return fd;
}

// One descriptor per subscriber: take the hard limit, as dstream does.
void raise_descriptor_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) == 0 && limit.rlim_cur < limit.rlim_max) {
        limit.rlim_cur = limit.rlim_max;
        ::setrlimit(RLIMIT_NOFILE, &limit);
    }
}

}  // namespace
}  // namespace dstream::bench

int main(int argc, char** argv) {
    CLI::App app{
        "fanout-floor: the floor of one SSE delivery (one send() of a ready event per "
        "subscriber), for dstream-bench fanout"};
    std::string listen;
    app.add_option("--listen", listen, "HOST:PORT to listen on")->required();
    CLI11_PARSE(app, argc, argv);
    try {
        dstream::bench::raise_descriptor_limit();
        dstream::bench::floor_server server(dstream::bench::open_listener(listen));
        server.run();
    } catch (const std::exception& e) {
        std::cerr << "fanout-floor: " << e.what() << "\n";
        return 1;
    }
}
