#include "sse_client.h"

#include <strings.h>

#include <boost/asio/write.hpp>
#include <boost/beast/http/read.hpp>

namespace dstream::bench {

namespace {
constexpr std::size_t kCaptureLimit = 512;
}  // namespace

sse_connection::sse_connection(asio::io_context& ioc, const target& t, sse_handler& handler)
    : target_(t), handler_(handler), sock_(ioc) {
    head_.reserve(512);
    body_capture_.reserve(kCaptureLimit);
    captured_.resize(capture_fields_.size());
}

void sse_connection::open() {
    active_ = true;
    announced_ = false;
    events_.reset();
    if (sock_.is_open()) {
        start_write();
        return;
    }
    buffer_.clear();
    ++connects_;
    async_open(sock_, target_, [this](const error_code& ec) {
        if (!active_) return;
        if (ec) {
            end(ec);
            return;
        }
        start_write();
    });
}

void sse_connection::close() {
    active_ = false;
    error_code ignored;
    if (sock_.is_open()) {
        sock_.shutdown(tcp::socket::shutdown_both, ignored);
        sock_.close(ignored);
    }
    buffer_.clear();
}

void sse_connection::start_write() {
    asio::async_write(sock_, asio::buffer(head_), [this](const error_code& ec, std::size_t) {
        if (!active_) return;
        if (ec) {
            end(ec);
            return;
        }
        body_capture_.clear();
        for (auto& v : captured_) v.clear();
        parser_.emplace(body_capture_, kCaptureLimit, capture_fields_, captured_,
                        static_cast<body_sink*>(this));
        parser_->eager(true);
        read_some();
    });
}

void sse_connection::read_some() {
    http::async_read_some(sock_, buffer_, *parser_,
                          [this](const error_code& ec, std::size_t) { on_read(ec); });
}

void sse_connection::on_read(const error_code& ec) {
    if (!active_) return;
    if (ec) {
        end(ec);
        return;
    }
    if (parser_->is_header_done()) announce_open();
    if (!active_) return;
    if (parser_->is_done()) {
        if (!parser_->keep_alive()) close();
        end(error_code{});
        return;
    }
    read_some();
}

void sse_connection::announce_open() {
    if (announced_) return;
    announced_ = true;
    const std::string& encoding = captured_[0];
    handler_.on_sse_open(*this, parser_->status(),
                         ::strncasecmp(encoding.c_str(), "base64", 6) == 0);
}

void sse_connection::end(const error_code& ec) {
    const int status = ec ? 0 : parser_->status();
    if (ec) close();
    active_ = false;
    handler_.on_sse_end(*this, ec, status, body_capture_);
}

void sse_connection::on_body(std::string_view piece) {
    if (!active_) return;
    // The head is complete once body bytes come; say so before the events.
    announce_open();
    if (active_) events_.feed(piece, *this);
}

void sse_connection::on_data_text(std::string_view piece) {
    if (active_) handler_.on_sse_data(*this, piece);
}

void sse_connection::on_event(sse_event_kind kind, std::string_view text) {
    if (active_) handler_.on_sse_event(*this, kind, text);
}

}  // namespace dstream::bench
