// exchange::send_streamed_and_slices over a loopback connection: the head
// goes out once the stream's first bytes are there, then the streamed bytes
// in order, then the hot slices; a stream that fails before its first bytes
// leaves nothing sent (the caller answers the refusal); one that fails after
// them closes the connection short of its Content-Length, never with other
// bytes.
#include <optional>
#include <string>
#include <vector>

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/read.hpp>
#include <gtest/gtest.h>

#include "edge/exchange.h"
#include "run_to_end.h"

namespace dstream::edge {
namespace {

namespace asio = boost::asio;
using batch = std::vector<byte_slice>;

std::vector<byte_slice> slices_of(const std::vector<std::string>& pieces) {
    std::vector<byte_slice> slices;
    for (const auto& piece : pieces) {
        auto owner = std::make_shared<const std::string>(piece);
        slices.push_back(byte_slice{owner, owner->data(), owner->size()});
    }
    return slices;
}

// Hands out one scripted batch per next(), then the end, or `failure`.
class scripted_stream final : public service::cold_stream {
public:
    scripted_stream(std::uint64_t size, std::vector<std::string> batches,
                    std::optional<error> failure = std::nullopt)
        : _size(size), _batches(std::move(batches)), _failure(std::move(failure)) {}

    std::uint64_t size() const override { return _size; }
    asio::awaitable<result<batch>> next() override {
        ++calls;
        if (_next < _batches.size()) co_return slices_of({_batches[_next++]});
        if (_failure) co_return *_failure;
        co_return batch{};
    }

    int calls = 0;

private:
    std::uint64_t _size;
    std::vector<std::string> _batches;
    std::size_t _next = 0;
    std::optional<error> _failure;
};

class StreamedAnswer : public ::testing::Test {
protected:
    StreamedAnswer() {
        _client.connect(_acceptor.local_endpoint());
        _server.emplace(_acceptor.accept(connection_executor(_io)));
    }

    status answer(service::cold_stream& cold, const std::vector<std::string>& hot) {
        exchange ex(*_server, _req, route{}, query_params{}, nullptr, _options, summary);
        response res = ex.make_response(http::status::ok);
        const auto slices = slices_of(hot);
        return test::run_to_end(_io, ex.send_streamed_and_slices(res, cold, slices));
    }

    // All the client receives until the server's side closes.
    std::string received() {
        _server->socket().shutdown(asio::ip::tcp::socket::shutdown_send);
        std::string out;
        boost::system::error_code ec;
        asio::read(_client, asio::dynamic_buffer(out), ec);
        EXPECT_EQ(ec, asio::error::eof);
        return out;
    }

    static std::string body_of(const std::string& message) {
        return message.substr(message.find("\r\n\r\n") + 4);
    }

    answer_summary summary;

private:
    asio::io_context _io;
    asio::ip::tcp::acceptor _acceptor{_io, {asio::ip::address_v4::loopback(), 0}};
    asio::ip::tcp::socket _client{_io};
    std::optional<connection_stream> _server;
    request _req{http::verb::get, "/v1/stream/s", 11};
    edge_options _options;
};

TEST_F(StreamedAnswer, TheStreamedBytesComeFirstInOrderThenTheHotOnes) {
    scripted_stream cold(6, {"ab", "cd", "ef"});
    ASSERT_TRUE(answer(cold, {"XY", "Z"}).ok());
    const std::string message = received();
    EXPECT_TRUE(message.starts_with("HTTP/1.1 200 OK\r\n")) << message;
    EXPECT_NE(message.find("Content-Length: 9\r\n"), std::string::npos) << message;
    EXPECT_EQ(body_of(message), "abcdefXYZ");
    EXPECT_FALSE(summary.close);
    EXPECT_EQ(summary.body_bytes, 9u);
}

TEST_F(StreamedAnswer, AStreamThatFailsBeforeItsFirstBytesLeavesNothingSent) {
    scripted_stream cold(6, {},
                         make_error(protocol::error_code::cold_backpressure, "the store is away"));
    const status sent = answer(cold, {"XYZ"});
    ASSERT_FALSE(sent.ok());
    EXPECT_EQ(sent.err().code, protocol::error_code::cold_backpressure);
    EXPECT_EQ(summary.status, 0u) << "no head was sent";
    EXPECT_EQ(received(), "");
}

TEST_F(StreamedAnswer, AStreamThatFailsAfterTheHeadEndsTheBodyShortAndClosesTheConnection) {
    scripted_stream cold(10, {"abcd"},
                         make_error(protocol::error_code::cold_backpressure, "the store gave up"));
    ASSERT_TRUE(answer(cold, {"XYZ"}).ok());
    EXPECT_TRUE(summary.close);
    EXPECT_EQ(cold.calls, 2);
    const std::string message = received();
    EXPECT_NE(message.find("Content-Length: 13\r\n"), std::string::npos) << message;
    EXPECT_EQ(body_of(message), "abcd") << "a prefix of the body, and no hot bytes after a gap";
}

}  // namespace
}  // namespace dstream::edge
