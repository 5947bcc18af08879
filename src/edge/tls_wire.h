#pragma once
// The TCP side of a TLS connection: what OpenSSL's records are written to.
//
// Asynchronous reads go to the connection's stream (its deadlines apply). A
// synchronous write never waits: the socket takes what it can at once, and
// the rest of the records is held here. That lets an answer be encrypted
// and sent without an asynchronous operation when the socket takes it
// whole, which it nearly always does, as the plain path does
// (edge/exchange.cc). A record the engine made cannot be handed back half
// written, so whoever writes synchronously then awaits async_flush(), which
// sends what is held, before anything else is written.
//
// HTTP/1.1 reads and writes one after the other: an asynchronous write goes
// straight to the stream, and none starts while bytes are held. On HTTP/2 a
// connection's reader runs beside its writer, and the reader's engine may
// write too (a TLS 1.3 key update answered): queue_writes() makes every
// asynchronous write copy its records behind the held ones and complete
// once they are sent. The engine's buffer is then free as soon as the write
// starts, so the writer's synchronous write never overwrites records still
// being sent, and the records leave in the order the engine made them.
#include <cassert>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <utility>

#include <boost/asio/buffer.hpp>
#include <boost/asio/compose.hpp>
#include <boost/asio/error.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/system/error_code.hpp>

#include "edge/connection_stream.h"

namespace dstream::edge {

class tls_wire {
public:
    using executor_type = connection_stream::executor_type;
    using lowest_layer_type = connection_stream::socket_type;

    explicit tls_wire(connection_stream& stream) : _stream(&stream) {}

    executor_type get_executor() noexcept { return _stream->get_executor(); }
    lowest_layer_type& lowest_layer() noexcept { return _stream->socket(); }
    const lowest_layer_type& lowest_layer() const noexcept { return _stream->socket(); }

    // From now on asynchronous writes are queued (see above).
    void queue_writes() { out().queued_mode = true; }

    template <class ConstBuffers>
    std::size_t write_some(const ConstBuffers& buffers, boost::system::error_code& ec) {
        ec = _out ? _out->failure : boost::system::error_code();
        if (ec) return 0;
        const std::size_t size = boost::asio::buffer_size(buffers);
        std::size_t sent = 0;
        if (!holds_output()) {
            sent = write_without_waiting(_stream->socket(), buffers, ec);
            if (ec || sent == size) return sent;
        }
        output& o = out();
        o.sent_total += sent;
        o.hold(buffers, sent);
        return size;
    }
    // A TLS write never needs to read on this server (renegotiation is
    // refused), and a synchronous read would block the thread.
    template <class MutableBuffers>
    std::size_t read_some(const MutableBuffers&, boost::system::error_code& ec) {
        ec = boost::asio::error::would_block;
        return 0;
    }

    template <class MutableBuffers, class Token>
    auto async_read_some(const MutableBuffers& buffers, Token&& token) {
        return _stream->async_read_some(buffers, std::forward<Token>(token));
    }
    template <class ConstBuffers, class Token>
    auto async_write_some(const ConstBuffers& buffers, Token&& token) {
        if (!_out || !_out->queued_mode) {
            assert(!holds_output());
            return _stream->async_write_some(buffers, std::forward<Token>(token));
        }
        const std::size_t size = boost::asio::buffer_size(buffers);
        _out->hold(buffers, 0);
        return await_sent(_out->held_total(), size, std::forward<Token>(token));
    }

    bool holds_output() const {
        return _out && (!_out->held.empty() || !_out->sending_now.empty());
    }
    // Completes (error_code) once every byte held when it was called is sent.
    template <class Token>
    auto async_flush(Token&& token) {
        return boost::asio::async_compose<Token, void(boost::system::error_code)>(
            [this, through = out().held_total(), started = false](
                auto& self, boost::system::error_code ec = {}, std::size_t = 0) mutable {
                if (!started) {
                    started = true;
                    return await_sent(through, 0, std::move(self));
                }
                self.complete(ec);
            },
            token, *_stream);
    }

private:
    struct output {
        // The timer never expires: it only wakes its waiters when cancelled.
        explicit output(const executor_type& executor)
            : step(executor, boost::asio::steady_timer::time_point::max()) {}

        template <class ConstBuffers>
        void hold(const ConstBuffers& buffers, std::size_t skip) {
            for (auto it = boost::asio::buffer_sequence_begin(buffers);
                 it != boost::asio::buffer_sequence_end(buffers); ++it) {
                const boost::asio::const_buffer b(*it);
                if (skip >= b.size()) {
                    skip -= b.size();
                    continue;
                }
                held.append(static_cast<const char*>(b.data()) + skip, b.size() - skip);
                skip = 0;
            }
        }
        // The asynchronous write of sending_now ended.
        void sent(boost::system::error_code ec, std::size_t n) {
            sending_now.erase(0, n);
            sent_total += n;
            // An idle connection keeps no buffer.
            if (sending_now.empty()) std::string().swap(sending_now);
            if (held.empty()) std::string().swap(held);
            sending = false;
            if (ec) failure = ec;
            step.cancel();
        }
        // The position (bytes since the connection began) after the last held byte.
        std::uint64_t held_total() const { return sent_total + sending_now.size() + held.size(); }

        bool queued_mode = false;
        // Records not yet sent, in the engine's order: those the one
        // asynchronous write in flight sends (never appended to while it
        // runs), then the others.
        std::string sending_now;
        std::string held;
        std::uint64_t sent_total = 0;
        bool sending = false;
        boost::system::error_code failure;  // it failed: so does every write after
        boost::asio::steady_timer step;     // cancelled when a send of held bytes ends
    };

    // Sends held bytes, one asynchronous write at a time, until the position
    // `through` is sent; then completes with (error, size). Everyone waiting
    // keeps the sending going, so held bytes always have a sender.
    template <class Token>
    auto await_sent(std::uint64_t through, std::size_t size, Token&& token) {
        return boost::asio::async_compose<Token, void(boost::system::error_code, std::size_t)>(
            [this, out = _out, through, size, started = false](
                auto& self, boost::system::error_code = {}, std::size_t = 0) mutable {
                const bool done = out->failure || out->sent_total >= through;
                if (!started) {
                    started = true;
                    // Never complete inside the call that started the write.
                    if (done) return boost::asio::post(_stream->get_executor(), std::move(self));
                } else if (done) {
                    if (out->failure) return self.complete(out->failure, 0);
                    return self.complete({}, size);
                }
                if (!out->sending) {
                    out->sending = true;
                    if (out->sending_now.empty()) out->sending_now.swap(out->held);
                    _stream->async_write_some(
                        boost::asio::buffer(out->sending_now),
                        [out](boost::system::error_code ec, std::size_t n) { out->sent(ec, n); });
                }
                out->step.async_wait(std::move(self));
            },
            token, *_stream);
    }

    // Made when first needed: most connections never hold a byte.
    output& out() {
        if (!_out) _out = std::make_shared<output>(_stream->get_executor());
        return *_out;
    }

    connection_stream* _stream;
    std::shared_ptr<output> _out;
};

}  // namespace dstream::edge
