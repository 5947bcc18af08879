#include "fake_s3_server.h"

#include <chrono>
#include <cstring>
#include <poll.h>
#include <stdexcept>
#include <unistd.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>

namespace dstream::testing {
namespace {

bool wait_readable(int fd, int timeout_ms) {
    pollfd p{fd, POLLIN, 0};
    return ::poll(&p, 1, timeout_ms) > 0;
}

void send_all(int fd, const std::string& bytes) {
    std::size_t done = 0;
    while (done < bytes.size()) {
        const ssize_t n = ::send(fd, bytes.data() + done, bytes.size() - done, MSG_NOSIGNAL);
        if (n <= 0) return;
        done += static_cast<std::size_t>(n);
    }
}

// The value of the header `name` (as "\r\nName: "), or "".
std::string header_value(const std::string& head, const std::string& name) {
    const std::size_t at = head.find(name);
    if (at == std::string::npos) return "";
    const std::size_t from = at + name.size();
    return head.substr(from, head.find("\r\n", from) - from);
}

// Resets the connection on close: RST, not FIN.
void abort_on_close(int fd) {
    const linger now{1, 0};
    ::setsockopt(fd, SOL_SOCKET, SO_LINGER, &now, sizeof now);
}

std::size_t content_length(const std::string& head) {
    for (const char* name : {"\r\nContent-Length:", "\r\ncontent-length:"}) {
        const std::size_t at = head.find(name);
        if (at != std::string::npos) return std::stoul(head.substr(at + std::strlen(name)));
    }
    return 0;
}

}  // namespace

fake_s3_server::fake_s3_server(std::uint16_t port) {
    _listener = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
    const int one = 1;
    ::setsockopt(_listener, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (::bind(_listener, reinterpret_cast<sockaddr*>(&address), sizeof address) != 0 ||
        ::listen(_listener, 16) != 0)
        throw std::runtime_error("fake_s3_server: cannot listen");
    socklen_t size = sizeof address;
    ::getsockname(_listener, reinterpret_cast<sockaddr*>(&address), &size);
    _port = ntohs(address.sin_port);
    _thread = std::thread([this] { serve(); });
}

fake_s3_server::~fake_s3_server() {
    _stopping = true;
    _thread.join();
    ::close(_listener);
}

void fake_s3_server::script(std::vector<fake_answer> answers) {
    std::lock_guard lock(_mutex);
    _script.assign(answers.begin(), answers.end());
}

std::vector<std::string> fake_s3_server::requests() const {
    std::lock_guard lock(_mutex);
    return _requests;
}

std::vector<std::string> fake_s3_server::ranges() const {
    std::lock_guard lock(_mutex);
    return _ranges;
}

fake_answer fake_s3_server::next_answer() {
    std::lock_guard lock(_mutex);
    if (_script.empty()) return fake_answer{};
    fake_answer answer = std::move(_script.front());
    _script.pop_front();
    return answer;
}

void fake_s3_server::serve() {
    while (!_stopping) {
        if (!wait_readable(_listener, 20)) continue;
        const int connection = ::accept4(_listener, nullptr, nullptr, SOCK_CLOEXEC);
        if (connection < 0) continue;
        handle(connection);
        ::close(connection);
    }
}

void fake_s3_server::handle(int connection) {
    std::string received;
    char buffer[65536];
    const auto receive = [&] {
        if (!wait_readable(connection, 5000)) return false;
        const ssize_t n = ::recv(connection, buffer, sizeof buffer, 0);
        if (n <= 0) return false;
        received.append(buffer, static_cast<std::size_t>(n));
        return true;
    };
    std::size_t head_end;
    while ((head_end = received.find("\r\n\r\n")) == std::string::npos)
        if (!receive()) return;
    const std::string head = received.substr(0, head_end + 2);
    {
        std::lock_guard lock(_mutex);
        const std::size_t space = head.find(' ');
        _requests.push_back(head.substr(0, head.find(' ', space + 1)));
        _ranges.push_back(header_value(head, "\r\nRange: "));
    }
    if (head.find("\r\nExpect: 100-continue") != std::string::npos)
        send_all(connection, "HTTP/1.1 100 Continue\r\n\r\n");
    const std::size_t total = head_end + 4 + content_length(head);
    while (received.size() < total)
        if (!receive()) return;

    fake_answer answer = next_answer();
    if (answer.what == fake_answer::kind::reset) {
        abort_on_close(connection);
        return;
    }
    if (answer.what == fake_answer::kind::ranged) {
        // "bytes=FIRST-LAST"
        const std::string range = header_value(head, "\r\nRange: ");
        const std::size_t first = std::stoul(range.substr(6));
        const std::size_t last = std::stoul(range.substr(range.find('-') + 1));
        answer.headers.push_back("Content-Range: bytes " + std::to_string(first) + "-" +
                                 std::to_string(last) + "/" + std::to_string(answer.body.size()));
        answer.body = answer.body.substr(first, last - first + 1);
    }
    if (answer.what == fake_answer::kind::stall) {
        while (!_stopping && !wait_readable(connection, 20)) {
        }
        return;
    }
    std::string text = "HTTP/1.1 " + std::to_string(answer.status) + " Scripted\r\n";
    for (const auto& line : answer.headers) text += line + "\r\n";
    text +=
        "Content-Length: " + std::to_string(answer.body.size()) + "\r\nConnection: close\r\n\r\n";
    if (answer.cut_after < answer.body.size()) {
        send_all(connection, text + answer.body.substr(0, answer.cut_after));
        // Long enough for the client to read what came before the reset.
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
        abort_on_close(connection);
        return;
    }
    if (head.rfind("HEAD ", 0) != 0) text += answer.body;
    send_all(connection, text);
}

}  // namespace dstream::testing
