#include "edge/exchange.h"

#include <array>
#include <charconv>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>

#include "edge/headers.h"
#include "edge/http_metrics.h"

namespace dstream::edge {
namespace {

namespace asio = boost::asio;

std::string json_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size());
    for (char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (static_cast<unsigned char>(c) < 0x20) {
                    static constexpr char hex[] = "0123456789abcdef";
                    out += "\\u00";
                    out += hex[(c >> 4) & 0xf];
                    out += hex[c & 0xf];
                } else {
                    out += c;
                }
        }
    }
    return out;
}

}  // namespace

response exchange::make_response(http::status status) const {
    response res{status, _req.version()};
    res.set(http::field::server, "dstream");
    res.set(hdr::ursula_protocol, "2");
    res.set(hdr::ursula_cluster_id, _options.cluster_id);
    res.set("X-Content-Type-Options", "nosniff");
    res.set(hdr::cross_origin_resource_policy, "cross-origin");
    res.set(http::field::access_control_allow_origin, "*");
    res.set(http::field::access_control_expose_headers, hdr::exposed_headers);
    res.keep_alive(_req.keep_alive() && !_summary.close);
    return res;
}

void exchange::sent(http::status status, std::uint64_t body_bytes) {
    _summary.status = static_cast<unsigned>(status);
    _summary.body_bytes += body_bytes;
}

response exchange::make_error(const error& e) const {
    response res = make_response(static_cast<http::status>(protocol::http_status(e.code)));
    res.set(http::field::content_type, "application/json");
    res.set(http::field::cache_control, "no-store");
    // extensions 11: a 503 carries Retry-After beside its code.
    if (res.result() == http::status::service_unavailable) res.set(http::field::retry_after, "1");
    if (!is_head()) {
        res.body() = "{\"error\":{\"code\":\"" + std::string(protocol::wire_code(e.code)) +
                     "\",\"message\":\"" + json_escape(e.message) + "\"}}";
    }
    return res;
}

asio::awaitable<void> exchange::send(response& res) {
    res.keep_alive(res.keep_alive() && !_summary.close);
    if (is_head()) {
        // A HEAD answer describes the GET answer's headers and sends no body.
        http::response<http::empty_body> head;
        head.base() = res.base();
        http::response_serializer<http::empty_body> sr{head};
        sent(res.result(), 0);
        co_await http::async_write_header(_stream, sr, asio::use_awaitable);
        co_return;
    }
    res.prepare_payload();
    sent(res.result(), res.body().size());
    co_await http::async_write(_stream, res, asio::use_awaitable);
}

asio::awaitable<void> exchange::pay_read_quota(std::uint64_t bytes) {
    if (_options.quota == nullptr || !_options.quota->enabled() || bytes == 0) co_return;
    boost::system::error_code ec;
    const auto peer = _stream.socket().remote_endpoint(ec);
    if (ec) co_return;  // the client left; the send will notice
    const auto now = read_quota::clock::now();
    const auto wait = _options.quota->charge(peer.address().to_string(), bytes, now);
    if (wait <= read_quota::clock::duration::zero()) co_return;
    http_metrics& m = http_metrics::get();
    m.read_quota_delays.inc();
    m.read_quota_delay_us.inc(static_cast<std::uint64_t>(
        std::chrono::duration_cast<std::chrono::microseconds>(wait).count()));
    asio::steady_timer delay(_stream.get_executor(), now + wait);
    co_await delay.async_wait(asio::redirect_error(asio::use_awaitable, ec));
}

asio::awaitable<void> exchange::send_slices(response& res,
                                            const std::vector<storage::byte_slice>& slices) {
    std::size_t total = 0;
    std::vector<asio::const_buffer> buffers;
    buffers.reserve(slices.size());
    for (const auto& s : slices) {
        total += s.size;
        buffers.emplace_back(s.data, s.size);
    }
    res.keep_alive(res.keep_alive() && !_summary.close);
    http::response<http::empty_body> head;
    head.base() = res.base();
    head.content_length(total);
    http::response_serializer<http::empty_body> sr{head};
    sent(res.result(), is_head() ? 0 : total);
    co_await http::async_write_header(_stream, sr, asio::use_awaitable);
    if (!is_head() && total > 0) co_await asio::async_write(_stream, buffers, asio::use_awaitable);
}

asio::awaitable<void> exchange::begin_stream(response& res) {
    http::response<http::empty_body> head;
    head.base() = res.base();
    head.chunked(true);
    head.keep_alive(false);
    _summary.close = true;
    http::response_serializer<http::empty_body> sr{head};
    sent(res.result(), 0);
    co_await http::async_write_header(_stream, sr, asio::use_awaitable);
}

asio::awaitable<bool> exchange::send_chunk(std::string_view data) {
    if (data.empty()) co_return true;  // an empty chunk would end the body
    std::array<char, 20> size_line{};
    const auto [end, ignored] =
        std::to_chars(size_line.data(), size_line.data() + 16, data.size(), 16);
    std::size_t size_length = static_cast<std::size_t>(end - size_line.data());
    size_line[size_length++] = '\r';
    size_line[size_length++] = '\n';
    const std::array<asio::const_buffer, 3> chunk{asio::buffer(size_line.data(), size_length),
                                                  asio::buffer(data.data(), data.size()),
                                                  asio::buffer("\r\n", 2)};
    // A live reader's chunk nearly always fits in the socket's send buffer:
    // write it now, without an asynchronous operation or a timer. Only what
    // does not fit waits, under the body timeout.
    boost::system::error_code ec;
    auto& socket = _stream.socket();
    if (!socket.non_blocking()) socket.non_blocking(true, ec);
    const std::size_t written = ec ? 0 : socket.write_some(chunk, ec);
    if (ec && ec != asio::error::would_block) co_return false;
    boost::beast::buffers_suffix<std::array<asio::const_buffer, 3>> rest(chunk);
    rest.consume(written);
    if (boost::beast::buffer_bytes(rest) > 0) {
        ec = {};
        _stream.expires_after(_options.body_timeout);
        co_await asio::async_write(_stream, rest, asio::redirect_error(asio::use_awaitable, ec));
        _stream.expires_never();
        if (ec) co_return false;
    }
    _summary.body_bytes += data.size();
    co_return true;
}

asio::awaitable<void> exchange::end_stream() {
    boost::system::error_code ec;
    const auto last = http::make_chunk_last();
    co_await asio::async_write(_stream, last, asio::redirect_error(asio::use_awaitable, ec));
}

}  // namespace dstream::edge
