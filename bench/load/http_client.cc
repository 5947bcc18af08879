#include "http_client.h"

#include <array>
#include <cctype>
#include <charconv>
#include <strings.h>

#include <boost/asio/connect.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>

namespace dstream::bench {

bool parse_target(std::string_view url, target& out, std::string& error) {
    constexpr std::string_view scheme = "http://";
    if (!url.starts_with(scheme)) {
        error = "URL must start with http:// (TLS is not supported)";
        return false;
    }
    std::string_view rest = url.substr(scheme.size());
    const auto slash = rest.find('/');
    std::string_view authority = rest.substr(0, slash);
    std::string_view path =
        slash == std::string_view::npos ? std::string_view{} : rest.substr(slash);
    while (!path.empty() && path.back() == '/') path.remove_suffix(1);

    std::string_view host;
    std::string_view port_text;
    if (authority.starts_with('[')) {
        const auto close = authority.find(']');
        if (close == std::string_view::npos) {
            error = "unterminated '[' in URL host";
            return false;
        }
        host = authority.substr(1, close - 1);
        std::string_view after = authority.substr(close + 1);
        if (after.starts_with(':')) port_text = after.substr(1);
    } else {
        const auto colon = authority.rfind(':');
        host = authority.substr(0, colon);
        if (colon != std::string_view::npos) port_text = authority.substr(colon + 1);
    }
    if (host.empty()) {
        error = "URL has no host";
        return false;
    }
    unsigned port = 80;
    if (!port_text.empty()) {
        auto [p, ec] = std::from_chars(port_text.data(), port_text.data() + port_text.size(), port);
        if (ec != std::errc{} || p != port_text.data() + port_text.size() || port == 0 ||
            port > 65535) {
            error = "bad port in URL: '" + std::string(port_text) + "'";
            return false;
        }
    }
    out.host = std::string(host);
    out.port = static_cast<std::uint16_t>(port);
    out.host_header = std::string(authority);
    out.base_path = std::string(path);

    asio::io_context ioc;
    tcp::resolver resolver(ioc);
    error_code ec;
    auto results = resolver.resolve(out.host, std::to_string(port), ec);
    if (ec || results.empty()) {
        error =
            "cannot resolve '" + out.host + "': " + (ec ? ec.message() : std::string("no address"));
        return false;
    }
    out.endpoint = results.begin()->endpoint();
    return true;
}

std::string describe_failure(const error_code& ec, int status, std::string_view body) {
    if (ec) return ec.message();
    return std::to_string(status) + " " + std::string(body);
}

void start_head(std::string& out, std::string_view method, std::string_view path, const target& t) {
    begin_request_line(out, method, path);
    end_request_line(out, t);
}

void begin_request_line(std::string& out, std::string_view method, std::string_view path) {
    out.append(method);
    out.push_back(' ');
    out.append(path);
}

void end_request_line(std::string& out, const target& t) {
    out.append(" HTTP/1.1\r\nHost: ");
    out.append(t.host_header);
    out.append("\r\n");
}

void add_field(std::string& out, std::string_view name, std::string_view value) {
    out.append(name);
    out.append(": ");
    out.append(value);
    out.append("\r\n");
}

void add_field(std::string& out, std::string_view name, std::uint64_t value) {
    out.append(name);
    out.append(": ");
    append_number(out, value);
    out.append("\r\n");
}

void end_head(std::string& out) { out.append("\r\n"); }

void append_number(std::string& out, std::uint64_t v) {
    char buf[24];
    auto [end, ec] = std::to_chars(buf, buf + sizeof buf, v);
    out.append(buf, end);
}

void append_query_value(std::string& out, std::string_view value) {
    static constexpr char hex[] = "0123456789ABCDEF";
    for (const char ch : value) {
        const auto c = static_cast<unsigned char>(ch);
        if (std::isalnum(c) || c == '-' || c == '.' || c == '_' || c == '~') {
            out.push_back(ch);
        } else {
            out.push_back('%');
            out.push_back(hex[c >> 4]);
            out.push_back(hex[c & 0xf]);
        }
    }
}

response_parser::response_parser(std::string& body_capture, std::size_t capture_limit,
                                 const std::vector<std::string>& capture_fields,
                                 std::vector<std::string>& captured, body_sink* sink)
    : body_capture_(body_capture),
      capture_limit_(capture_limit),
      capture_fields_(capture_fields),
      captured_(captured),
      sink_(sink) {
    // Beast 1.74's body_limit(boost::none) does not work: use a large number.
    body_limit(std::uint64_t{1} << 40);
    header_limit(64 * 1024);
}

void response_parser::on_field_impl(http::field, beast::string_view name, beast::string_view value,
                                    error_code&) {
    for (std::size_t i = 0; i < capture_fields_.size(); ++i) {
        const std::string& want = capture_fields_[i];
        if (want.size() == name.size() &&
            ::strncasecmp(want.data(), name.data(), name.size()) == 0) {
            captured_[i].assign(value.data(), value.size());
        }
    }
}

void response_parser::take(beast::string_view body) {
    body_bytes_ += body.size();
    const bool success = status_ >= 200 && status_ < 300;
    if (success && sink_ != nullptr) sink_->on_body({body.data(), body.size()});
    if (!success && body_capture_.size() < capture_limit_) {
        body_capture_.append(body.data(),
                             std::min(body.size(), capture_limit_ - body_capture_.size()));
    }
}

std::size_t response_parser::on_body_impl(beast::string_view body, error_code&) {
    take(body);
    return body.size();
}

std::size_t response_parser::on_chunk_body_impl(std::uint64_t, beast::string_view body,
                                                error_code&) {
    take(body);
    return body.size();
}

http_connection::http_connection(asio::io_context& ioc, const target& t, exchange_handler& handler)
    : ioc_(ioc), target_(t), handler_(handler), sock_(ioc) {
    head_.reserve(1024);
    body_capture_.reserve(capture_limit);
}

void http_connection::connect() {
    busy_ = true;
    connect_only_ = true;
    if (sock_.is_open()) {
        finish(error_code{});
        return;
    }
    start_connect(false);
}

void http_connection::send(std::string_view body) {
    busy_ = true;
    connect_only_ = false;
    body_ = body;
    if (!sock_.is_open()) {
        start_connect(true);
        return;
    }
    start_write();
}

void http_connection::close() {
    error_code ignored;
    if (sock_.is_open()) {
        sock_.shutdown(tcp::socket::shutdown_both, ignored);
        sock_.close(ignored);
    }
    buffer_.clear();
}

void http_connection::start_connect(bool then_write) {
    buffer_.clear();
    ++connects_;
    async_open(sock_, target_, [this, then_write](const error_code& ec) {
        if (!ec && then_write) {
            start_write();
            return;
        }
        resp_.start = bench_clock::now();
        finish(ec);
    });
}

void http_connection::start_write() {
    resp_.start = bench_clock::now();
    const std::array<asio::const_buffer, 2> bufs{asio::buffer(head_),
                                                 asio::buffer(body_.data(), body_.size())};
    asio::async_write(sock_, bufs, [this](const error_code& ec, std::size_t) { on_write(ec); });
}

void http_connection::on_write(const error_code& ec) {
    if (ec) {
        finish(ec);
        return;
    }
    body_capture_.clear();
    if (captured_.size() != capture_fields.size()) captured_.resize(capture_fields.size());
    for (auto& v : captured_) v.clear();
    parser_.emplace(body_capture_, capture_limit, capture_fields, captured_, sink);
    parser_->eager(true);
    parse_buffered();
}

void http_connection::parse_buffered() {
    while (buffer_.size() > 0 && !parser_->is_done()) {
        error_code ec;
        const std::size_t used = parser_->put(buffer_.data(), ec);
        buffer_.consume(used);
        if (ec == http::error::need_more) break;
        if (ec) {
            finish(ec);
            return;
        }
    }
    if (parser_->is_done()) {
        on_read();
        return;
    }
    // Reads grow while they fill the space offered: a long body then comes
    // in few large reads (each read is a system call and, on loopback, the
    // sender's ACK processing too); short answers keep a small buffer.
    const std::size_t want = read_bytes_;
    sock_.async_read_some(buffer_.prepare(want), [this, want](error_code ec, std::size_t n) {
        buffer_.commit(n);
        if (n == want) read_bytes_ = std::min(read_bytes_ * 2, max_read_bytes);
        if (ec == asio::error::eof) {
            // A body that ends with the connection is whole at EOF.
            ec = {};
            parser_->put_eof(ec);
            if (!ec && parser_->is_done()) {
                on_read();
                return;
            }
        }
        if (ec) {
            finish(ec);
            return;
        }
        parse_buffered();
    });
}

void http_connection::on_read() {
    resp_.status = parser_->status();
    resp_.keep_alive = parser_->keep_alive();
    resp_.body_bytes = parser_->body_bytes();
    if (!resp_.keep_alive) close();
    finish(error_code{});
}

void http_connection::finish(const error_code& ec) {
    resp_.end = bench_clock::now();
    resp_.ec = ec;
    if (ec) {
        resp_.status = 0;
        resp_.keep_alive = false;
        resp_.body_bytes = 0;
        close();
    } else if (connect_only_) {
        resp_.status = 0;
        resp_.keep_alive = true;
        resp_.body_bytes = 0;
    }
    if (connect_only_ || ec) body_capture_.clear();
    resp_.body = body_capture_;
    resp_.fields = &captured_;
    busy_ = false;
    handler_.on_response(*this, resp_);
}

}  // namespace dstream::bench
