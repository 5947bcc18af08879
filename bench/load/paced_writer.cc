#include "paced_writer.h"

#include <algorithm>
#include <cmath>

#include <boost/asio/post.hpp>

#include "scenario.h"
#include "stamp.h"

namespace dstream::bench {
namespace {

constexpr std::size_t kMaxSamples = 5;
// The writer looks at the phase at least this often, however low the rate.
constexpr auto kMaxIdleWait = std::chrono::milliseconds(50);

}  // namespace

void add_stamped_write_options(CLI::App& sub, stamped_write_options& o, const char* rate_help) {
    sub.add_option("--rate", o.rate, rate_help)->capture_default_str()->check(CLI::Range(0.1, 1e6));
    sub.add_option("--body-bytes", o.body_bytes,
                   "bytes per message (at least the stamp, up to 43 bytes)")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{16} << 20));
    sub.add_option("--writers", o.writers, "writer connections, one append in flight each")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1024u));
}

paced_writer::paced_writer(asio::io_context& ioc, const target& t,
                           const std::vector<std::string>& paths, const std::string& content_type,
                           const stamped_write_options& o, const run_phase& ph, double max_seconds)
    : ioc_(ioc),
      opt_(o),
      phase_(ph),
      json_(is_json_type(content_type)),
      streams_(paths.size()),
      timer_(ioc) {
    per_stream_ = static_cast<std::uint64_t>(std::ceil(o.rate * max_seconds)) + 1;
    interval_ns_ = 1e9 / (o.rate * static_cast<double>(streams_));
    for (const auto& p : paths) {
        std::string& h = prefixes_.emplace_back();
        start_head(h, "POST", p, t);
        add_field(h, "Content-Type", content_type);
    }
    acked_.assign(streams_, seq_set(per_stream_));
    const std::size_t body_capacity = std::max(o.body_bytes, kMaxStampBytes + 2);
    for (unsigned k = 0; k < o.writers; ++k) {
        auto c = std::make_unique<http_connection>(ioc, t, *this);
        c->tag = k;
        c->head().reserve(prefixes_.front().size() + 64);
        idle_.push_back(c.get());
        conns_.push_back(std::move(c));
        bodies_.emplace_back().reserve(body_capacity);
    }
    in_flight_i_.assign(o.writers, 0);
    in_window_.assign(o.writers, 0);
}

void paced_writer::start() {
    asio::post(ioc_, [this] {
        started_ = true;
        start_ = bench_clock::now();
        pump();
    });
}

void paced_writer::abort() {
    aborted_ = true;
    timer_.cancel();
    for (auto& c : conns_) c->close();
}

bench_clock::time_point paced_writer::due(std::uint64_t i) const {
    return start_ + std::chrono::nanoseconds(static_cast<std::int64_t>(
                        std::llround(static_cast<double>(i) * interval_ns_)));
}

void paced_writer::pump() {
    if (finished_.load(std::memory_order_relaxed)) return;
    if (phase_.stopping()) {
        if (busy_ == 0) finish();
        return;
    }
    const auto now = bench_clock::now();
    const std::uint64_t limit = per_stream_ * streams_;
    while (next_ < limit && due(next_) <= now && !idle_.empty()) {
        http_connection* c = idle_.back();
        idle_.pop_back();
        send(*c, next_++, now);
    }
    // Wake for the next due message when a connection is free to send it;
    // otherwise an answer frees one (and pumps), and the timer only watches
    // the phase.
    auto wake = now + kMaxIdleWait;
    if (next_ < limit && !idle_.empty()) wake = std::min(wake, due(next_));
    if (!armed_ || wake < timer_.expiry()) {
        armed_ = true;
        timer_.expires_at(wake);  // cancels a wait still pending
        timer_.async_wait([this](const error_code& ec) {
            if (ec) return;
            armed_ = false;
            pump();
        });
    }
}

void paced_writer::send(http_connection& c, std::uint64_t i, bench_clock::time_point now) {
    const std::size_t stream = i % streams_;
    const std::uint64_t sent_ns = stamp_now_ns();
    in_window_[c.tag] = phase_.measuring() ? 1 : 0;
    if (phase_.measuring()) {
        if (window_start_ns_.load(std::memory_order_relaxed) ==
            std::numeric_limits<std::uint64_t>::max()) {
            window_start_ns_.store(sent_ns, std::memory_order_release);
        }
        ++totals_.sent_in_window;
    }
    totals_.max_lag_ms = std::max(totals_.max_lag_ms,
                                  std::chrono::duration<double, std::milli>(now - due(i)).count());
    std::string& body = bodies_[c.tag];
    write_stamped_body(body, i / streams_, sent_ns, opt_.body_bytes, json_);
    std::string& h = c.head();
    h.assign(prefixes_[stream]);
    add_field(h, "Content-Length", body.size());
    end_head(h);
    in_flight_i_[c.tag] = i;
    ++busy_;
    ++totals_.sent;
    c.send(body);
}

void paced_writer::on_response(http_connection& c, const response& r) {
    --busy_;
    idle_.push_back(&c);
    const std::uint64_t i = in_flight_i_[c.tag];
    if (r.ok()) {
        ++totals_.acked;
        acked_[i % streams_].insert(i / streams_);
        if (in_window_[c.tag] != 0) totals_.write_latency.record(r.latency_ns());
    } else if (aborted_) {
        ++totals_.unanswered;
    } else {
        ++(r.ec ? totals_.transport_errors : totals_.errors);
        if (totals_.samples.size() < kMaxSamples) {
            totals_.samples.push_back("append: " + describe_failure(r));
        }
    }
    if (started_) pump();
}

void paced_writer::finish() {
    timer_.cancel();
    for (auto& c : conns_) c->close();
    finished_.store(true, std::memory_order_release);
    if (on_finished) on_finished();
}

}  // namespace dstream::bench
