#include "edge/exchange.h"

#include <array>
#include <cassert>
#include <cerrno>
#include <charconv>
#include <cstring>
#include <tuple>
#include <unistd.h>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/asio/write.hpp>
#include <boost/beast/core/buffers_suffix.hpp>
#include <sys/sendfile.h>
#include <sys/socket.h>

#include "edge/h2_session.h"
#include "edge/headers.h"
#include "edge/http_metrics.h"
#include "edge/tls_wire.h"

namespace dstream::edge {
namespace {

namespace asio = boost::asio;

// Over TLS, a write of at most this many bytes is encrypted and sent at
// once; what the socket does not take is held as records until sent. A
// larger one (a catch-up read) waits for the socket record by record, so
// that a slow reader is not given a copy of it to hold.
constexpr std::size_t tls_written_now_at_most = 64 * 1024;

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

// The fields every answer carries; the CORS pair last, where `cors`.
common_fields common_answer_fields(std::string_view cluster_id, bool cors) {
    return common_fields(
        {{{"Server", "server", "dstream"},
          {hdr::ursula_protocol, "ursula-protocol", "2"},
          {hdr::ursula_cluster_id, "ursula-cluster-id", cluster_id},
          {"X-Content-Type-Options", "x-content-type-options", "nosniff"},
          {hdr::cross_origin_resource_policy, "cross-origin-resource-policy", "cross-origin"},
          {"Access-Control-Allow-Origin", "access-control-allow-origin", "*"},
          {"Access-Control-Expose-Headers", "access-control-expose-headers",
           hdr::exposed_headers}}},
        cors);
}

// The status line, the fields every answer carries and the answer's own.
// The common ones are written here rather than kept as fields of each
// response: that was seven allocations per answer.
head_text serialize_head(const response::header_type& head, const common_fields& common) {
    const unsigned version = head.version();
    const unsigned code = head.result_int();
    const auto reason = head.reason();
    constexpr std::string_view crlf = "\r\n";
    constexpr std::string_view separator = ": ";
    char status_line[] = "HTTP/1.1 200 ";
    // Sized once and filled by copies: one allocation, no check per piece.
    std::size_t size = sizeof status_line - 1 + reason.size() + 2 * crlf.size();
    constexpr std::size_t punctuation = separator.size() + crlf.size();
    for (const auto& field : common) size += field.name.size() + field.value.size() + punctuation;
    for (const auto& field : head) {
        size += field.name_string().size() + field.value().size() + punctuation;
    }
    head_text out(head.get_allocator());
    out.resize(size);
    char* at = out.data();
    const auto put = [&at](std::string_view piece) {
        std::memcpy(at, piece.data(), piece.size());
        at += piece.size();
    };
    status_line[5] = static_cast<char>('0' + version / 10);
    status_line[7] = static_cast<char>('0' + version % 10);
    status_line[9] = static_cast<char>('0' + code / 100);
    status_line[10] = static_cast<char>('0' + (code / 10) % 10);
    status_line[11] = static_cast<char>('0' + code % 10);
    put(std::string_view(status_line, sizeof status_line - 1));
    put(std::string_view(reason.data(), reason.size()));
    put(crlf);
    const auto add = [&put](std::string_view name, std::string_view value) {
        put(name);
        put(separator);
        put(value);
        put(crlf);
    };
    for (const auto& field : common) add(field.name, field.value);
    for (const auto& field : head) {
        add(std::string_view(field.name_string().data(), field.name_string().size()),
            std::string_view(field.value().data(), field.value().size()));
    }
    put(crlf);
    return out;
}

void append_buffers(std::vector<asio::const_buffer>& buffers,
                    const std::vector<byte_slice>& slices) {
    for (const auto& s : slices) buffers.emplace_back(s.data, s.size);
}

// Beast's setter rewrites the Connection field even when the answer says so
// already, as most do: HTTP/1.1 keeps the connection unless told otherwise.
void set_keep_alive(response& res, bool keep) {
    if (res.keep_alive() != keep) res.keep_alive(keep);
}

bool without_content(http::status status) {
    return http::to_status_class(status) == http::status_class::informational ||
           status == http::status::no_content || status == http::status::not_modified;
}

// The peer went away mid-answer: the connection's loop ends on the throw.
void throw_if_failed(const boost::system::error_code& ec) {
    if (ec) throw boost::system::system_error(ec);
}

}  // namespace

common_fields exchange::answer_fields() const {
    const http::verb method = _req.method();
    const bool cors = method == http::verb::get || method == http::verb::head ||
                      method == http::verb::options || _req.find(http::field::origin) != _req.end();
    return common_answer_fields(_options.cluster_id, cors);
}

response exchange::make_response(http::status status) const {
    response res = response_to(_req, status);
    set_keep_alive(res, _req.keep_alive() && !_summary.close);
    if (_route.where != surface::base_v1) res.set(http::field::cache_control, "no-store");
    return res;
}

void exchange::set_cache_control(response& res, std::string_view directive) const {
    if (_route.where == surface::base_v1) {
        res.set(http::field::cache_control,
                boost::beast::string_view(directive.data(), directive.size()));
    }
}

bool exchange::has_query() const {
    return split_request_target(std::string_view(_req.target().data(), _req.target().size()))
        .has_query;
}

void exchange::keep_request_line_only() {
    request line(std::piecewise_construct, std::make_tuple(),
                 std::make_tuple(field_allocator<char>()));
    if (_req.method() == http::verb::unknown) {
        line.method_string(_req.method_string());
    } else {
        line.method(_req.method());
    }
    line.target(_req.target());
    line.version(_req.version());
    line.keep_alive(_req.keep_alive());
    _req = std::move(line);
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
    if (_group && (e.code == protocol::error_code::no_leader ||
                   e.code == protocol::error_code::outcome_unknown)) {
        res.set(hdr::raft_group, std::to_string(*_group));
    }
    if (!is_head()) {
        res.body() = "{\"error\":{\"code\":\"" + std::string(protocol::wire_code(e.code)) +
                     "\",\"message\":\"" + json_escape(e.message) + "\"}}";
    }
    return res;
}

asio::awaitable<void> exchange::send(response& res) {
    if (_summary.close) set_keep_alive(res, false);
    // A HEAD answer describes the GET answer's headers and sends no body.
    // Nor does a 1xx, 204 or 304 answer, which carries no Content-Length
    // either (RFC 9110 8.6): a 304's would have to be the 200's length.
    if (!is_head() && !without_content(res.result())) res.prepare_payload();
    const std::string_view body = is_head() ? std::string_view() : std::string_view(res.body());
    if (_io.h2 != nullptr) {
        // The length is prepare_payload()'s, or a HEAD answer's own.
        sent(res.result(), body.size());
        _io.h2->respond(res.base(), answer_fields(), !body.empty());
        const std::array<asio::const_buffer, 1> data{asio::buffer(body.data(), body.size())};
        if (body.empty()) co_return;
        if (!co_await h2_write(data)) throw_if_failed(asio::error::connection_aborted);
        _io.h2->finish();
        co_return;
    }
    sent(res.result(), body.size());
    const head_text head = serialize_head(res.base(), answer_fields());
    const std::array<asio::const_buffer, 2> message{asio::buffer(head), asio::buffer(body)};
    auto now = write_now(message);
    if (!now.done) now.ec = co_await write_rest(message, now.written, write_deadline::none);
    throw_if_failed(now.ec);
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

head_text exchange::body_head(response& res, std::uint64_t body_bytes) {
    if (_summary.close) set_keep_alive(res, false);
    res.content_length(body_bytes);
    sent(res.result(), is_head() ? 0 : body_bytes);
    return serialize_head(res.base(), answer_fields());
}

asio::awaitable<void> exchange::send_slices(response& res, const std::vector<byte_slice>& slices) {
    std::uint64_t total = 0;
    for (const auto& s : slices) total += s.size;
    if (_io.h2 != nullptr) {
        h2_head(res, total);
        if (is_head() || total == 0) co_return;
        std::vector<asio::const_buffer> data;
        append_buffers(data, slices);
        if (!co_await h2_write(data)) throw_if_failed(asio::error::connection_aborted);
        _io.h2->finish();
        co_return;
    }
    const head_text head = body_head(res, total);
    std::vector<asio::const_buffer> message;
    message.reserve(1 + (is_head() ? 0 : slices.size()));
    message.emplace_back(asio::buffer(head));
    if (!is_head()) append_buffers(message, slices);
    auto now = write_now(message);
    if (!now.done) now.ec = co_await write_rest(message, now.written, write_deadline::none);
    throw_if_failed(now.ec);
}

asio::awaitable<void> exchange::send_files_and_slices(response& res,
                                                      const std::vector<storage::file_slice>& files,
                                                      const std::vector<byte_slice>& slices) {
    if (files.empty()) {
        co_await send_slices(res, slices);
        co_return;
    }
    std::uint64_t total = 0;
    for (const auto& f : files) total += f.size;
    for (const auto& s : slices) total += s.size;
    if (_io.h2 != nullptr) {
        h2_head(res, total);
        if (is_head() || total == 0) co_return;
        for (const auto& f : files) {
            const boost::system::error_code ec = co_await write_file_in_pieces(f);
            throw_if_failed(ec);
        }
        std::vector<asio::const_buffer> data;
        append_buffers(data, slices);
        if (!co_await h2_write(data)) throw_if_failed(asio::error::connection_aborted);
        _io.h2->finish();
        co_return;
    }
    const head_text head = body_head(res, total);
    const std::array<asio::const_buffer, 1> head_only{asio::buffer(head)};
    throw_if_failed(co_await write(head_only, write_deadline::none));
    if (is_head()) co_return;
    for (const auto& f : files) throw_if_failed(co_await write_file(f));
    std::vector<asio::const_buffer> rest;
    rest.reserve(slices.size());
    append_buffers(rest, slices);
    throw_if_failed(co_await write(rest, write_deadline::none));
}

asio::awaitable<status> exchange::send_streamed_and_slices(response& res,
                                                           service::cold_stream& cold,
                                                           const std::vector<byte_slice>& slices) {
    result<std::vector<byte_slice>> batch = co_await cold.next();
    if (!batch) co_return batch.err();
    std::uint64_t total = cold.size();
    for (const auto& s : slices) total += s.size;
    if (_io.h2 != nullptr) {
        h2_head(res, total);
        std::vector<asio::const_buffer> data;
        while (!batch->empty()) {
            data.clear();
            append_buffers(data, *batch);
            if (!co_await h2_write(data)) throw_if_failed(asio::error::connection_aborted);
            batch = co_await cold.next();
            if (!batch) {
                // Only a short body is honest: the stream is reset.
                _io.h2->reset();
                co_return ok_status();
            }
        }
        data.clear();
        append_buffers(data, slices);
        if (!co_await h2_write(data)) throw_if_failed(asio::error::connection_aborted);
        _io.h2->finish();
        co_return ok_status();
    }
    const head_text head = body_head(res, total);
    std::vector<asio::const_buffer> message{asio::buffer(head)};
    while (!batch->empty()) {
        append_buffers(message, *batch);
        // Under the body timeout: a reader that stops reading holds a
        // connection to the store and a thread of the cold read pool.
        throw_if_failed(co_await write(message, write_deadline::body_timeout));
        message.clear();
        batch = co_await cold.next();
        if (!batch) {
            // The store gave up past its retries: only a short body is honest.
            close_after();
            co_return ok_status();
        }
    }
    append_buffers(message, slices);
    throw_if_failed(co_await write(message, write_deadline::none));
    co_return ok_status();
}

asio::awaitable<void> exchange::begin_stream(response& res) {
    if (_io.h2 != nullptr) {
        // DATA frames carry the events; the stream ends with the body, the
        // connection stays.
        sent(res.result(), 0);
        _io.h2->respond(res.base(), answer_fields(), true);
        co_return;
    }
    res.chunked(true);
    res.keep_alive(false);
    _summary.close = true;
    sent(res.result(), 0);
    const head_text head = serialize_head(res.base(), answer_fields());
    const std::array<asio::const_buffer, 1> message{asio::buffer(head)};
    throw_if_failed(co_await write(message, write_deadline::none));
}

namespace {

// An HTTP/1.1 chunk's size line: its size in hex, CRLF.
class chunk_size_line {
public:
    explicit chunk_size_line(std::size_t bytes) {
        const auto [end, ignored] = std::to_chars(_text.data(), _text.data() + 16, bytes, 16);
        _length = static_cast<std::size_t>(end - _text.data());
        _text[_length++] = '\r';
        _text[_length++] = '\n';
    }
    std::string_view text() const { return {_text.data(), _length}; }

private:
    std::array<char, 18> _text{};
    std::size_t _length = 0;
};

}  // namespace

asio::awaitable<bool> exchange::send_chunk(std::string_view data) {
    if (data.empty()) co_return true;  // an empty chunk would end the body
    if (_io.h2 != nullptr) {
        const std::array<asio::const_buffer, 1> piece{asio::buffer(data.data(), data.size())};
        if (!co_await _io.h2->write(piece)) co_return false;
        _summary.body_bytes += data.size();
        co_return true;
    }
    const chunk_size_line size_line(data.size());
    const std::array<asio::const_buffer, 3> chunk{asio::buffer(size_line.text()),
                                                  asio::buffer(data.data(), data.size()),
                                                  asio::buffer("\r\n", 2)};
    // Under the body timeout: a live reader that stops reading is let go.
    auto now = write_now(chunk);
    if (!now.done) now.ec = co_await write_rest(chunk, now.written, write_deadline::body_timeout);
    if (now.ec) co_return false;
    _summary.body_bytes += data.size();
    co_return true;
}

void exchange::append_chunk(std::string& out, std::string_view data, std::string_view more) {
    assert(!data.empty() || !more.empty());  // an empty chunk ends the body
    const chunk_size_line size_line(data.size() + more.size());
    out.reserve(out.size() + size_line.text().size() + data.size() + more.size() + 2);
    out.append(size_line.text()).append(data).append(more).append("\r\n");
}

namespace {

// The bytes of a framed chunk's data, as send_chunk() counts them: less its
// size line (a few hex digits, CRLF) and its CRLF.
std::size_t chunk_data_bytes(std::string_view chunk) {
    std::size_t digits = 0;
    while (chunk[digits] != '\r') ++digits;
    return chunk.size() - digits - 4;
}

}  // namespace

exchange::framed_writer exchange::writer_of_framed_chunks() {
    assert(writes_framed_chunks());
    auto& socket = _stream.socket();
    boost::system::error_code ignored;
    if (!socket.non_blocking()) socket.non_blocking(true, ignored);
    return framed_writer(socket.native_handle(), _summary.body_bytes);
}

exchange::chunk_progress exchange::framed_writer::send_now(std::string_view chunk) const {
    chunk_progress progress;
    ssize_t n = 0;
    do {
        n = ::send(_fd, chunk.data(), chunk.size(), MSG_NOSIGNAL);
    } while (n < 0 && errno == EINTR);
    if (n < 0) {
        progress.failed = errno != EAGAIN && errno != EWOULDBLOCK;
        return progress;
    }
    progress.written = static_cast<std::size_t>(n);
    progress.done = progress.written == chunk.size();
    if (progress.done) *_body_bytes += chunk_data_bytes(chunk);
    return progress;
}

asio::awaitable<bool> exchange::send_framed_rest(std::string_view chunk, std::size_t written) {
    const std::array<asio::const_buffer, 1> buffers{asio::buffer(chunk.data(), chunk.size())};
    // Under the body timeout: a live reader that stops reading is let go.
    if (co_await write_rest(buffers, written, write_deadline::body_timeout)) co_return false;
    _summary.body_bytes += chunk_data_bytes(chunk);
    co_return true;
}

asio::awaitable<void> exchange::end_stream() {
    if (_io.h2 != nullptr) {
        _io.h2->finish();
        co_return;
    }
    const std::array<asio::const_buffer, 1> last{asio::buffer("0\r\n\r\n", 5)};
    co_await write(last, write_deadline::body_timeout);
}

exchange::written_now exchange::write_now(std::span<const asio::const_buffer> buffers) {
    // An answer nearly always fits in the socket's send buffer: write it now,
    // without an asynchronous operation, a work guard or a timer. Only what
    // does not fit waits for the socket.
    written_now now;
    if (_io.tls != nullptr) {
        // What the socket does not take is held by the wire (edge/tls_wire.h)
        // until write_rest(); a large write waits for the socket instead.
        const std::size_t size = boost::beast::buffer_bytes(buffers);
        if (size > tls_written_now_at_most) return now;
        now.written = asio::write(*_io.tls, buffers, now.ec);
        if (now.ec == asio::error::would_block) now.ec = {};
        now.done = now.ec || (now.written == size && !_io.tls->next_layer().holds_output());
        return now;
    }
    now.written = write_without_waiting(_stream.socket(), buffers, now.ec);
    now.done = now.ec || now.written == boost::beast::buffer_bytes(buffers);
    return now;
}

asio::awaitable<boost::system::error_code> exchange::write_rest(
    std::span<const asio::const_buffer> buffers, std::size_t written, write_deadline deadline) {
    boost::system::error_code ec;
    boost::beast::buffers_suffix<std::span<const asio::const_buffer>> rest(buffers);
    rest.consume(written);
    if (deadline == write_deadline::body_timeout) _stream.expires_after(_options.body_timeout);
    if (_io.tls != nullptr) {
        tls_wire& wire = _io.tls->next_layer();
        if (wire.holds_output()) {
            co_await wire.async_flush(asio::redirect_error(asio::use_awaitable, ec));
        }
        if (!ec && boost::beast::buffer_bytes(rest) > 0) {
            co_await asio::async_write(*_io.tls, rest,
                                       asio::redirect_error(asio::use_awaitable, ec));
        }
    } else {
        co_await asio::async_write(_stream, rest, asio::redirect_error(asio::use_awaitable, ec));
    }
    if (deadline == write_deadline::body_timeout) _stream.expires_never();
    co_return ec;
}

asio::awaitable<boost::system::error_code> exchange::write(
    std::span<const asio::const_buffer> buffers, write_deadline deadline) {
    auto now = write_now(buffers);
    if (!now.done) now.ec = co_await write_rest(buffers, now.written, deadline);
    co_return now.ec;
}

asio::awaitable<boost::system::error_code> exchange::write_file(const storage::file_slice& file) {
    boost::system::error_code ec;
    if (_io.tls != nullptr) co_return co_await write_file_in_pieces(file);
    auto& socket = _stream.socket();
    if (!socket.non_blocking()) socket.non_blocking(true, ec);
    if (ec) co_return ec;
    auto at = static_cast<off_t>(file.offset);
    std::uint64_t left = file.size;
    while (left > 0) {
        // sendfile moves at most 2 GiB less a page at once.
        const ssize_t n = ::sendfile(socket.native_handle(), file.file->fd(), &at,
                                     std::min<std::uint64_t>(left, std::uint64_t{1} << 30));
        if (n > 0) {
            left -= static_cast<std::uint64_t>(n);
            http_metrics::get().bytes_sent_from_files.inc(static_cast<std::uint64_t>(n));
            continue;
        }
        // The file ends before its piece: the answer cannot be completed.
        if (n == 0) co_return make_error_code(boost::system::errc::io_error);
        if (errno == EINTR) continue;
        if (errno != EAGAIN)
            co_return boost::system::error_code(errno, boost::system::system_category());
        co_await socket.async_wait(asio::ip::tcp::socket::wait_write,
                                   asio::redirect_error(asio::use_awaitable, ec));
        if (ec) co_return ec;
    }
    co_return ec;
}

// A file's bytes that we must frame ourselves (TLS records, HTTP/2 DATA)
// cannot go by sendfile: they are read in pieces and written as any other
// bytes of the answer. On HTTP/2 the stream's window paces the reads.
asio::awaitable<boost::system::error_code> exchange::write_file_in_pieces(
    const storage::file_slice& file) {
    constexpr std::size_t piece = 64 * 1024;
    std::vector<char> buffer(static_cast<std::size_t>(std::min<std::uint64_t>(file.size, piece)));
    auto at = static_cast<off_t>(file.offset);
    std::uint64_t left = file.size;
    while (left > 0) {
        const ssize_t n =
            ::pread(file.file->fd(), buffer.data(),
                    static_cast<std::size_t>(std::min<std::uint64_t>(left, piece)), at);
        // The file ends before its piece: the answer cannot be completed.
        if (n == 0) co_return make_error_code(boost::system::errc::io_error);
        if (n < 0) {
            if (errno == EINTR) continue;
            co_return boost::system::error_code(errno, boost::system::system_category());
        }
        at += n;
        left -= static_cast<std::uint64_t>(n);
        const std::array<asio::const_buffer, 1> one{
            asio::buffer(buffer.data(), static_cast<std::size_t>(n))};
        if (_io.h2 != nullptr) {
            if (!co_await _io.h2->write(one)) co_return asio::error::connection_aborted;
        } else if (auto ec = co_await write_rest(one, 0, write_deadline::none)) {
            co_return ec;
        }
    }
    co_return boost::system::error_code{};
}

void exchange::h2_head(response& res, std::uint64_t body_bytes) {
    res.content_length(body_bytes);
    sent(res.result(), is_head() ? 0 : body_bytes);
    const bool data = !is_head() && body_bytes > 0;
    _io.h2->respond(res.base(), answer_fields(), data);
}

asio::awaitable<bool> exchange::h2_write(std::span<const asio::const_buffer> buffers) {
    co_return co_await _io.h2->write(buffers);
}

}  // namespace dstream::edge
