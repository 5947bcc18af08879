// tls_wire (edge/tls_wire.h) over a loopback connection whose client reads
// nothing at first: what the socket does not take is held; with writes
// queued (HTTP/2), a record written asynchronously (a reader's TLS engine)
// goes behind the held ones and its buffer is free at once, a synchronous
// write while a send is in flight goes behind both, and every byte arrives
// once, in the order written.
#include "edge/tls_wire.h"

#include <chrono>
#include <optional>
#include <string>
#include <thread>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/socket_base.hpp>
#include <gtest/gtest.h>

namespace dstream::edge {
namespace {

namespace asio = boost::asio;

std::string pattern(std::size_t size, char first) {
    std::string s(size, '\0');
    for (std::size_t i = 0; i < size; ++i)
        s[i] = static_cast<char>(first + (i * 7 + (i >> 10)) % 26);
    return s;
}

class TlsWire : public ::testing::Test {
protected:
    TlsWire() {
        _client.connect(_acceptor.local_endpoint());
        _server.emplace(_acceptor.accept(connection_executor(_io)));
        // Small buffers, so that a few hundred KiB fill the connection.
        _server->socket().set_option(asio::socket_base::send_buffer_size(16 * 1024));
        _client.set_option(asio::socket_base::receive_buffer_size(16 * 1024));
        _client.non_blocking(true);
    }

    // Runs the server's operations while the client reads, until `size`
    // bytes arrived and nothing is left to run.
    std::string receive(std::size_t size) {
        std::string got;
        char buf[65536];
        for (int idle = 0; idle < 2000 && (got.size() < size || !_io.stopped());) {
            _io.restart();
            const std::size_t ran = _io.poll();
            boost::system::error_code ec;
            const std::size_t n = _client.read_some(asio::buffer(buf), ec);
            got.append(buf, ec ? 0 : n);
            idle = (ran == 0 && (ec || n == 0)) ? idle + 1 : 0;
            if (got.size() >= size && ran == 0) break;
            if (idle > 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        }
        return got;
    }

    asio::io_context _io;
    asio::ip::tcp::acceptor _acceptor{_io, {asio::ip::address_v4::loopback(), 0}};
    asio::ip::tcp::socket _client{_io};
    std::optional<connection_stream> _server;
};

TEST_F(TlsWire, QueuedWritesLeaveInTheOrderTheyWereMade) {
    tls_wire wire(*_server);
    wire.queue_writes();
    const std::string first = pattern(1 << 20, 'a');
    std::string engine = "a record the reader's engine made";
    const std::string engine_before = engine;
    const std::string second = pattern(256 << 10, 'A');

    boost::system::error_code ec;
    EXPECT_EQ(wire.write_some(asio::buffer(first), ec), first.size());
    EXPECT_FALSE(ec);
    EXPECT_TRUE(wire.holds_output()) << "the client reads nothing: the socket cannot take 1 MiB";

    bool engine_written = false;
    wire.async_write_some(asio::buffer(engine), [&](boost::system::error_code e, std::size_t n) {
        EXPECT_FALSE(e);
        EXPECT_EQ(n, engine_before.size());
        engine_written = true;
    });
    // Copied: the engine reuses its buffer at once.
    engine.assign(engine.size(), '#');
    // A send of the held bytes is in flight: this goes behind them.
    EXPECT_EQ(wire.write_some(asio::buffer(second), ec), second.size());
    EXPECT_FALSE(ec);
    bool flushed = false;
    wire.async_flush([&](boost::system::error_code e) {
        EXPECT_FALSE(e);
        flushed = true;
    });
    EXPECT_FALSE(engine_written) << "completed before its bytes were sent";

    const std::string expected = first + engine_before + second;
    const std::string got = receive(expected.size());
    EXPECT_TRUE(engine_written);
    EXPECT_TRUE(flushed);
    EXPECT_FALSE(wire.holds_output());
    ASSERT_EQ(got.size(), expected.size());
    EXPECT_TRUE(got == expected) << "bytes out of order";
}

TEST_F(TlsWire, HeldBytesAreFlushedBeforeTheNextAsynchronousWrite) {
    tls_wire wire(*_server);
    const std::string first = pattern(512 << 10, 'a');
    const std::string second = pattern(300 << 10, 'A');
    boost::system::error_code ec;
    EXPECT_EQ(wire.write_some(asio::buffer(first), ec), first.size());
    EXPECT_TRUE(wire.holds_output());
    bool second_written = false;
    wire.async_flush([&](boost::system::error_code e) {
        ASSERT_FALSE(e);
        EXPECT_FALSE(wire.holds_output());
        wire.async_write_some(asio::buffer(second), [&](boost::system::error_code e2, std::size_t) {
            EXPECT_FALSE(e2);
            second_written = true;
        });
    });
    // async_write_some writes some: the test takes what it wrote.
    const std::string got = receive(first.size() + 1);
    EXPECT_TRUE(second_written);
    ASSERT_GT(got.size(), first.size());
    EXPECT_TRUE(got.compare(0, first.size(), first) == 0);
    EXPECT_TRUE(
        got.compare(first.size(), std::string::npos, second, 0, got.size() - first.size()) == 0);
}

TEST_F(TlsWire, AFailedSendFailsWhatWaitsAndEveryLaterWrite) {
    tls_wire wire(*_server);
    wire.queue_writes();
    const std::string first = pattern(1 << 20, 'a');
    boost::system::error_code ec;
    wire.write_some(asio::buffer(first), ec);
    ASSERT_TRUE(wire.holds_output());
    boost::system::error_code flushed = asio::error::would_block;
    wire.async_flush([&](boost::system::error_code e) { flushed = e; });
    // The client leaves without reading: the connection is reset.
    _client.set_option(asio::socket_base::linger(true, 0));
    _client.close();
    for (int i = 0; i < 2000 && flushed == asio::error::would_block; ++i) {
        _io.restart();
        _io.run_for(std::chrono::milliseconds(5));
    }
    EXPECT_TRUE(flushed) << "the flush of a reset connection succeeded";
    EXPECT_NE(flushed, asio::error::would_block) << "the flush never completed";
    EXPECT_EQ(wire.write_some(asio::buffer(first), ec), 0u);
    EXPECT_TRUE(ec);
}

}  // namespace
}  // namespace dstream::edge
