#include "edge/h2_session.h"

#include <algorithm>
#include <array>
#include <charconv>
#include <cstring>
#include <vector>

#include <boost/asio/redirect_error.hpp>
#include <boost/asio/use_awaitable.hpp>
#include <boost/beast/core/string.hpp>
#include <nghttp2/nghttp2.h>

namespace dstream::edge {
namespace {

namespace asio = boost::asio;
using clock = std::chrono::steady_clock;

// RST_STREAM, SETTINGS and PING a client may send: a burst, then so many a
// second. A browser resets a few streams when a page goes away, sends a
// handful of SETTINGS and pings now and then; a flood sends thousands.
constexpr double reset_burst = 200;
constexpr double reset_rate = 50;
constexpr double control_burst = 100;
constexpr double control_rate = 10;

// Fields that name the HTTP/1.1 connection; HTTP/2 forbids them (RFC 9113 8.2.2).
bool connection_specific(std::string_view lower) {
    return lower == "connection" || lower == "keep-alive" || lower == "proxy-connection" ||
           lower == "transfer-encoding" || lower == "upgrade";
}

std::string lowercase(std::string_view s) {
    std::string out(s);
    for (char& c : out) {
        if (c >= 'A' && c <= 'Z') c = static_cast<char>(c - 'A' + 'a');
    }
    return out;
}

// Fields whose value moves with every write to a stream (a position, a
// sequence number) or differs from stream to stream. Entered in the HPACK
// table they would never be sent again: they only pushed out the entries that
// do repeat (the fields every answer carries), and as every entry of one name
// shares nghttp2's lookup chain, each answer's encoding compared its fields
// with dozens of dead ones (8,100 instructions per answer, against 5,500 with
// these left out of the table). They go as literals that are never indexed
// (RFC 7541 6.2.3), as nghttp2 sends ETag and Content-Length of its own accord.
bool value_never_repeats(std::string_view lower) {
    static constexpr std::array<std::string_view, 9> names = {
        "stream-next-offset",    "stream-offset",         "stream-cursor",
        "stream-incarnation",    "stream-last-seq",       "producer-seq",
        "producer-expected-seq", "producer-received-seq", "content-range"};
    return std::find(names.begin(), names.end(), lower) != names.end();
}

nghttp2_nv make_nv(std::string_view name, std::string_view value,
                   std::uint8_t flags = NGHTTP2_NV_FLAG_NONE) {
    return nghttp2_nv{reinterpret_cast<std::uint8_t*>(const_cast<char*>(name.data())),
                      reinterpret_cast<std::uint8_t*>(const_cast<char*>(value.data())), name.size(),
                      value.size(), flags};
}

}  // namespace

bool h2_session::bucket::take() {
    const auto now = clock::now();
    tokens = std::min(burst, tokens + rate * std::chrono::duration<double>(now - at).count());
    at = now;
    if (tokens < 1) return false;
    tokens -= 1;
    return true;
}

// nghttp2's callbacks, with the session as their user data.
struct h2_session::callbacks {
    static h2_session& of(void* user) { return *static_cast<h2_session*>(user); }
    static h2_stream* stream(nghttp2_session* ng, std::int32_t id) {
        return static_cast<h2_stream*>(nghttp2_session_get_stream_user_data(ng, id));
    }

    static int on_begin_frame(nghttp2_session*, const nghttp2_frame_hd* hd, void* user) {
        h2_session& s = of(user);
        if (hd->type == NGHTTP2_HEADERS) s._continuations = 0;
        return 0;
    }

    static int on_begin_headers(nghttp2_session* ng, const nghttp2_frame* frame, void* user) {
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
            return 0;
        }
        h2_session& s = of(user);
        auto st = std::make_shared<h2_stream>(s, frame->hd.stream_id, s._executor);
        nghttp2_session_set_stream_user_data(ng, frame->hd.stream_id, st.get());
        s._streams.emplace(frame->hd.stream_id, std::move(st));
        return 0;
    }

    static int on_header(nghttp2_session* ng, const nghttp2_frame* frame, const std::uint8_t* n,
                         std::size_t nlen, const std::uint8_t* v, std::size_t vlen, std::uint8_t,
                         void* user) {
        if (frame->hd.type != NGHTTP2_HEADERS || frame->headers.cat != NGHTTP2_HCAT_REQUEST) {
            return 0;  // trailers are not read
        }
        h2_stream* st = stream(ng, frame->hd.stream_id);
        if (st == nullptr || st->_head_refused) return 0;
        // RFC 9113 6.5.2: each field counts its name, value and 32.
        st->_head_bytes += nlen + vlen + 32;
        if (st->_head_bytes > of(user)._limits.max_header_list_bytes) {
            st->_head_refused = true;
            return 0;
        }
        const std::string_view name(reinterpret_cast<const char*>(n), nlen);
        const std::string_view value(reinterpret_cast<const char*>(v), vlen);
        const boost::beast::string_view beast_value(value.data(), value.size());
        request& req = st->_req;
        if (name == ":method") {
            req.method_string(beast_value);
        } else if (name == ":path") {
            req.target(beast_value);
        } else if (name == ":authority") {
            req.set(http::field::host, beast_value);
        } else if (name.starts_with(':')) {
            // :scheme; nghttp2 refuses unknown pseudo-fields itself.
        } else {
            if (name == "content-length") {
                std::uint64_t length = 0;
                const auto [end, ec] =
                    std::from_chars(value.data(), value.data() + value.size(), length);
                if (ec == std::errc() && end == value.data() + value.size()) {
                    st->_has_declared = true;
                    st->_declared = length;
                }
            }
            req.insert(boost::beast::string_view(name.data(), name.size()), beast_value);
        }
        return 0;
    }

    static int on_frame_recv(nghttp2_session* ng, const nghttp2_frame* frame, void* user) {
        h2_session& s = of(user);
        switch (frame->hd.type) {
            case NGHTTP2_HEADERS: {
                h2_stream* st = stream(ng, frame->hd.stream_id);
                if (st == nullptr) break;
                if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
                    st->_body_done = true;
                    st->wake();
                }
                if (frame->headers.cat == NGHTTP2_HCAT_REQUEST && s._on_request) {
                    s._on_request(st->shared_from_this());
                }
                break;
            }
            case NGHTTP2_DATA:
                if ((frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
                    if (h2_stream* st = stream(ng, frame->hd.stream_id)) {
                        st->_body_done = true;
                        st->wake();
                    }
                }
                break;
            case NGHTTP2_RST_STREAM:
                if (!s._resets.take()) return s.fail(h2_refusal::rapid_reset);
                break;
            case NGHTTP2_SETTINGS:
                if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0 && !s._settings.take()) {
                    return s.fail(h2_refusal::settings_flood);
                }
                break;
            case NGHTTP2_PING:
                if ((frame->hd.flags & NGHTTP2_FLAG_ACK) == 0 && !s._pings.take()) {
                    return s.fail(h2_refusal::ping_flood);
                }
                break;
            default:
                break;
        }
        return 0;
    }

    static int on_data_chunk(nghttp2_session* ng, std::uint8_t, std::int32_t id,
                             const std::uint8_t* data, std::size_t len, void* user) {
        h2_stream* st = stream(ng, id);
        if (st == nullptr) {
            nghttp2_session_consume_connection(ng, len);
            return 0;
        }
        if (st->_dropping || st->_body_too_large) {
            nghttp2_session_consume(ng, id, len);
            return 0;
        }
        std::string& body = st->_req.body();
        if (body.size() + len > of(user)._limits.max_body_bytes) {
            st->_body_too_large = true;
            nghttp2_session_consume(ng, id, st->_unconsumed + len);
            st->_unconsumed = 0;
            st->wake();
            return 0;
        }
        body.append(reinterpret_cast<const char*>(data), len);
        // Until the request is admitted (edge/admission.h) its window stays
        // as it is: a client holds at most a window of body per stream.
        if (st->_consuming) {
            nghttp2_session_consume(ng, id, len);
        } else {
            st->_unconsumed += len;
        }
        return 0;
    }

    static int on_frame_send(nghttp2_session* ng, const nghttp2_frame* frame, void*) {
        // An answer complete before its request (an early answer, 413): the
        // rest of the body is not wanted (RFC 9113 8.1).
        if ((frame->hd.type == NGHTTP2_HEADERS || frame->hd.type == NGHTTP2_DATA) &&
            (frame->hd.flags & NGHTTP2_FLAG_END_STREAM) != 0) {
            h2_stream* st = stream(ng, frame->hd.stream_id);
            if (st != nullptr && !st->_body_done) {
                nghttp2_submit_rst_stream(ng, NGHTTP2_FLAG_NONE, frame->hd.stream_id,
                                          NGHTTP2_NO_ERROR);
            }
        }
        return 0;
    }

    static int on_stream_close(nghttp2_session* ng, std::int32_t id, std::uint32_t, void* user) {
        h2_session& s = of(user);
        if (h2_stream* st = stream(ng, id)) {
            st->_gone = true;
            st->wake();
            nghttp2_session_set_stream_user_data(ng, id, nullptr);
        }
        s._streams.erase(id);
        return 0;
    }

    static ssize_t read_data(nghttp2_session*, std::int32_t, std::uint8_t* buf, std::size_t length,
                             std::uint32_t* flags, nghttp2_data_source* source, void*) {
        auto* st = static_cast<h2_stream*>(source->ptr);
        bool end = false;
        const std::size_t n = st->take(buf, length, end);
        if (end) *flags |= NGHTTP2_DATA_FLAG_EOF;
        if (n == 0 && !end) {
            st->_deferred = true;
            return NGHTTP2_ERR_DEFERRED;
        }
        return static_cast<ssize_t>(n);
    }
};

int h2_session::fail(h2_refusal why) {
    refuse(why);
    return NGHTTP2_ERR_CALLBACK_FAILURE;
}

h2_session::h2_session(connection_executor executor, const h2_limits& limits,
                       std::function<void(std::shared_ptr<h2_stream>)> on_request)
    : _executor(std::move(executor)),
      _limits(limits),
      _on_request(std::move(on_request)),
      _resets{reset_burst, reset_burst, reset_rate, clock::now()},
      _settings{control_burst, control_burst, control_rate, clock::now()},
      _pings{control_burst, control_burst, control_rate, clock::now()} {
    nghttp2_session_callbacks* cbs = nullptr;
    nghttp2_session_callbacks_new(&cbs);
    nghttp2_session_callbacks_set_on_begin_frame_callback(cbs, callbacks::on_begin_frame);
    nghttp2_session_callbacks_set_on_begin_headers_callback(cbs, callbacks::on_begin_headers);
    nghttp2_session_callbacks_set_on_header_callback(cbs, callbacks::on_header);
    nghttp2_session_callbacks_set_on_frame_recv_callback(cbs, callbacks::on_frame_recv);
    nghttp2_session_callbacks_set_on_data_chunk_recv_callback(cbs, callbacks::on_data_chunk);
    nghttp2_session_callbacks_set_on_frame_send_callback(cbs, callbacks::on_frame_send);
    nghttp2_session_callbacks_set_on_stream_close_callback(cbs, callbacks::on_stream_close);
    nghttp2_option* opt = nullptr;
    nghttp2_option_new(&opt);
    // Our encoder's HPACK table; the decoder's is the setting below.
    nghttp2_option_set_max_deflate_dynamic_table_size(opt, _limits.header_table_bytes);
    nghttp2_option_set_no_closed_streams(opt, 1);
    // Windows open as bodies are taken (h2_stream::wait_body), not as they
    // arrive.
    nghttp2_option_set_no_auto_window_update(opt, 1);
    // Resets are bounded by our own bucket (which names the refusal); this
    // is nghttp2's backstop.
    nghttp2_option_set_stream_reset_rate_limit(opt, 10000, 1000);
    nghttp2_session_server_new2(&_ng, cbs, this, opt);
    nghttp2_option_del(opt);
    nghttp2_session_callbacks_del(cbs);

    const std::array<nghttp2_settings_entry, 5> settings{{
        {NGHTTP2_SETTINGS_MAX_CONCURRENT_STREAMS, _limits.max_concurrent_streams},
        {NGHTTP2_SETTINGS_INITIAL_WINDOW_SIZE, static_cast<std::uint32_t>(_limits.stream_window)},
        {NGHTTP2_SETTINGS_MAX_HEADER_LIST_SIZE, _limits.max_header_list_bytes},
        {NGHTTP2_SETTINGS_HEADER_TABLE_SIZE, _limits.header_table_bytes},
        {NGHTTP2_SETTINGS_NO_RFC7540_PRIORITIES, 1},
    }};
    nghttp2_submit_settings(_ng, NGHTTP2_FLAG_NONE, settings.data(), settings.size());
    nghttp2_session_set_local_window_size(_ng, NGHTTP2_FLAG_NONE, 0, _limits.connection_window);
}

h2_session::~h2_session() {
    close();
    nghttp2_session_del(_ng);
}

bool h2_session::receive(const std::uint8_t* data, std::size_t size) {
    if (_closed) return false;
    const ssize_t rv = nghttp2_session_mem_recv(_ng, data, size);
    if (rv >= 0) return _refusal == h2_refusal::none;
    if (_refusal == h2_refusal::none) {
        refuse(rv == NGHTTP2_ERR_FLOODED                  ? h2_refusal::ack_flood
               : rv == NGHTTP2_ERR_TOO_MANY_CONTINUATIONS ? h2_refusal::continuation_flood
                                                          : h2_refusal::protocol);
    }
    return false;
}

void h2_session::take_output(std::string& out, std::size_t max) {
    while (out.size() < max) {
        const std::uint8_t* data = nullptr;
        const ssize_t n = nghttp2_session_mem_send(_ng, &data);
        if (n <= 0) break;
        out.append(reinterpret_cast<const char*>(data), static_cast<std::size_t>(n));
    }
}

bool h2_session::wants_io() const {
    return !_closed &&
           (nghttp2_session_want_read(_ng) != 0 || nghttp2_session_want_write(_ng) != 0);
}

void h2_session::drain() {
    if (_draining || _closed) return;
    _draining = true;
    // RFC 9113 6.8: the streams begun so far are answered; no new one is.
    nghttp2_submit_goaway(_ng, NGHTTP2_FLAG_NONE, nghttp2_session_get_last_proc_stream_id(_ng),
                          NGHTTP2_NO_ERROR, nullptr, 0);
    wake_writer();
}

void h2_session::refuse(h2_refusal why) {
    if (_refusal != h2_refusal::none) return;
    _refusal = why;
    http_metrics::get().h2_refusals[static_cast<std::size_t>(why)].inc();
    nghttp2_session_terminate_session(
        _ng, why == h2_refusal::protocol ? NGHTTP2_PROTOCOL_ERROR : NGHTTP2_ENHANCE_YOUR_CALM);
    wake_writer();
}

void h2_session::close() {
    if (_closed) return;
    _closed = true;
    for (auto& [id, st] : _streams) {
        st->_gone = true;
        st->_session = nullptr;
        st->wake();
    }
    _streams.clear();
}

h2_stream::h2_stream(h2_session& session, std::int32_t id, connection_executor executor)
    : _session(&session), _id(id), _timer(executor) {
    _req.version(11);
}

void h2_stream::wake() { _timer.cancel(); }

void h2_stream::consume_all() {
    _consuming = true;
    if (_unconsumed == 0 || _session == nullptr || _gone) return;
    nghttp2_session_consume(_session->_ng, _id, _unconsumed);
    _unconsumed = 0;
    _session->wake_writer();
}

void h2_stream::drop_body() {
    _dropping = true;
    consume_all();
}

asio::awaitable<h2_stream::body_state> h2_stream::wait_body() {
    consume_all();
    const auto deadline =
        clock::now() + (_session ? _session->_limits.body_timeout : std::chrono::seconds(0));
    boost::system::error_code ec;
    while (true) {
        if (_body_too_large) co_return body_state::too_large;
        if (_body_done) co_return body_state::complete;
        if (_gone || _session == nullptr) co_return body_state::gone;
        if (clock::now() >= deadline) {
            reset();
            co_return body_state::gone;
        }
        _timer.expires_at(deadline);
        co_await _timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
    }
}

void h2_stream::respond(const response::header_type& head, const common_fields& common, bool body) {
    if (_session == nullptr || _gone) return;
    std::array<char, 3> status{};
    const unsigned code = head.result_int();
    status[0] = static_cast<char>('0' + code / 100);
    status[1] = static_cast<char>('0' + (code / 10) % 10);
    status[2] = static_cast<char>('0' + code % 10);
    std::vector<std::string> names;  // lowercased; nghttp2 copies what it is given
    names.reserve(std::distance(head.begin(), head.end()));
    std::vector<nghttp2_nv> nv;
    nv.reserve(names.capacity() + 8);
    nv.push_back(make_nv(":status", std::string_view(status.data(), status.size())));
    for (const auto& field : common) nv.push_back(make_nv(field.h2_name, field.value));
    for (const auto& field : head) {
        std::string lower =
            lowercase(std::string_view(field.name_string().data(), field.name_string().size()));
        if (connection_specific(lower)) continue;
        const std::uint8_t flags =
            value_never_repeats(lower) ? NGHTTP2_NV_FLAG_NO_INDEX : NGHTTP2_NV_FLAG_NONE;
        names.push_back(std::move(lower));
        nv.push_back(make_nv(names.back(),
                             std::string_view(field.value().data(), field.value().size()), flags));
    }
    nghttp2_data_provider provider{};
    provider.source.ptr = this;
    provider.read_callback = h2_session::callbacks::read_data;
    nghttp2_submit_response(_session->_ng, _id, nv.data(), nv.size(), body ? &provider : nullptr);
    _session->wake_writer();
}

std::size_t h2_stream::take(std::uint8_t* out, std::size_t length, bool& end) {
    std::size_t n = 0;
    while (n < length && !_queue.empty()) {
        const std::string& front = _queue.front();
        const std::size_t piece = std::min(length - n, front.size() - _queue_front);
        std::memcpy(out + n, front.data() + _queue_front, piece);
        n += piece;
        _queue_front += piece;
        if (_queue_front == front.size()) {
            _queue.pop_front();
            _queue_front = 0;
        }
    }
    _queued -= n;
    if (n > 0) {
        _progress = clock::now();
        wake();
    }
    end = _finished && _queued == 0;
    return n;
}

asio::awaitable<bool> h2_stream::write(std::span<const asio::const_buffer> buffers) {
    if (_session == nullptr || _gone) co_return false;
    const std::size_t limit = _session->_limits.stream_send_buffer;
    boost::system::error_code ec;
    for (const auto& b : buffers) {
        const char* p = static_cast<const char*>(b.data());
        std::size_t left = b.size();
        while (left > 0) {
            if (_session == nullptr || _gone) co_return false;
            const std::size_t piece = std::min(left, limit);
            if (_queued == 0) _progress = clock::now();
            _queue.emplace_back(p, piece);
            _queued += piece;
            p += piece;
            left -= piece;
            if (_deferred) {
                _deferred = false;
                nghttp2_session_resume_data(_session->_ng, _id);
            }
            _session->wake_writer();
            // The client's window decides: a slow reader's answer waits here
            // with at most `limit` bytes queued.
            while (_queued > limit) {
                if (_session == nullptr || _gone) co_return false;
                const auto deadline = _progress + _session->_limits.body_timeout;
                if (clock::now() >= deadline) {
                    _session->refuse(h2_refusal::stall);
                    co_return false;
                }
                _timer.expires_at(deadline);
                co_await _timer.async_wait(asio::redirect_error(asio::use_awaitable, ec));
            }
        }
    }
    co_return _session != nullptr && !_gone;
}

void h2_stream::finish() {
    _finished = true;
    if (_session == nullptr || _gone) return;
    if (_deferred) {
        _deferred = false;
        nghttp2_session_resume_data(_session->_ng, _id);
    }
    _session->wake_writer();
}

void h2_stream::reset() {
    if (_session == nullptr || _gone) return;
    nghttp2_submit_rst_stream(_session->_ng, NGHTTP2_FLAG_NONE, _id, NGHTTP2_CANCEL);
    _session->wake_writer();
}

}  // namespace dstream::edge
