// The writer of the delivery scenarios (fanout, longpoll): appends stamped
// messages (stamp.h) to N streams at R messages per second each, open loop:
// message i is due at start + i / (R * N), goes to stream i % N with sequence
// number i / N, and is stamped when it is actually written. A few keep-alive
// connections share the schedule, each with one append in flight; when all
// are busy the due messages wait, and the largest such lag is reported.
//
// Runs on one io_context. It appends through warm-up and the window, stops
// when the phase says so, and once every append has been answered it closes
// its connections and calls on_finished (on its own thread).
#pragma once

#include <atomic>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <boost/asio/steady_timer.hpp>

#include "histogram.h"
#include "http_client.h"
#include "runner.h"
#include "seq_set.h"

namespace dstream::bench {

struct stamped_write_options {
    double rate = 100;  // messages per second per stream
    std::size_t body_bytes = 256;
    unsigned writers = 16;  // connections
};

// --rate, --body-bytes, --writers.
void add_stamped_write_options(CLI::App& sub, stamped_write_options& o, const char* rate_help);

class paced_writer final : public exchange_handler {
public:
    // `max_seconds` bounds how long the schedule may run (warm-up, window and
    // some slack); it sizes the acknowledgement bitmaps.
    paced_writer(asio::io_context& ioc, const target& t, const std::vector<std::string>& paths,
                 const std::string& content_type, const stamped_write_options& o,
                 const run_phase& ph, double max_seconds);

    // Posts the start of the schedule to the writer's io_context.
    void start();
    // On the writer's thread: closes the connections (the drain ran out of
    // time); appends in flight count as unanswered, not as errors.
    void abort();

    // Called once, on the writer's thread, when it has stopped and every
    // append has been answered; acked() is final from then on.
    std::function<void()> on_finished;

    // The stamp of the first message written inside the window (max until
    // then): a delivery counts in the window's latency when its stamp is at
    // or after this.
    const std::atomic<std::uint64_t>& window_start_ns() const { return window_start_ns_; }
    // Sequence numbers per stream are below this.
    std::uint64_t capacity() const { return per_stream_; }
    // Only once finished() (which orders the reads after the writes).
    const seq_set& acked(std::size_t stream) const { return acked_[stream]; }
    bool finished() const { return finished_.load(std::memory_order_acquire); }

    struct totals {
        std::uint64_t sent = 0, acked = 0, errors = 0, transport_errors = 0;
        std::uint64_t unanswered = 0;  // still in flight when the run was aborted
        std::uint64_t sent_in_window = 0;
        double max_lag_ms = 0;  // how late after its due time a message was written, at most
        // Of the appends sent in the window and answered 2xx: from the start
        // of the request's write to the last byte of its answer.
        histogram write_latency;
        std::vector<std::string> samples;
    };
    // Read after the run.
    const totals& result() const { return totals_; }

    void on_response(http_connection& c, const response& r) override;

private:
    bench_clock::time_point due(std::uint64_t i) const;
    void pump();
    void send(http_connection& c, std::uint64_t i, bench_clock::time_point now);
    void finish();

    asio::io_context& ioc_;
    const stamped_write_options& opt_;
    const run_phase& phase_;
    const bool json_;
    const std::size_t streams_;
    std::uint64_t per_stream_ = 0;
    double interval_ns_ = 0;
    std::vector<std::string> prefixes_;  // request head up to Content-Length, per stream
    std::vector<std::unique_ptr<http_connection>> conns_;
    std::vector<std::string> bodies_;         // per connection
    std::vector<std::uint64_t> in_flight_i_;  // message index per connection
    std::vector<std::uint8_t> in_window_;     // per connection: its append was sent in the window
    std::vector<http_connection*> idle_;
    std::vector<seq_set> acked_;
    asio::steady_timer timer_;
    bool armed_ = false;  // a timer wait is pending
    bool aborted_ = false;
    bool started_ = false;
    bench_clock::time_point start_;
    std::uint64_t next_ = 0;
    std::size_t busy_ = 0;
    totals totals_;
    std::atomic<std::uint64_t> window_start_ns_{std::numeric_limits<std::uint64_t>::max()};
    std::atomic<bool> finished_{false};
};

}  // namespace dstream::bench
