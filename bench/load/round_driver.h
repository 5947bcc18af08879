// Clients released together, round after round (catchup, bootstrap): every
// client's connection is opened first, untimed; then all start round 0 at
// once, and the last client to finish a round starts the next one on every
// client. The rounds are one sampled run (server and generator CPU), and
// each round's wall-clock time is kept.
//
// Client k lives on thread k % T; a scenario derives from it, says how a
// round starts and what to do with each answer, and calls finish_round()
// when client k is through with the round.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "histogram.h"
#include "http_client.h"
#include "report.h"
#include "runner.h"

namespace dstream::bench {

// The answers of one generator thread (only that thread writes them).
struct alignas(64) request_stats {
    histogram latency;  // 2xx answers
    std::uint64_t requests = 0;
    std::uint64_t body_bytes = 0;  // of 2xx answers
    error_log errors;              // non-2xx answers and transport failures

    void merge(const request_stats& o);
};

class round_driver : public exchange_handler {
public:
    round_driver(worker_pool& pool, const target& t, std::size_t clients, unsigned rounds);
    virtual ~round_driver() = default;
    round_driver(const round_driver&) = delete;
    round_driver& operator=(const round_driver&) = delete;

    // Opens the connections, then runs the rounds within `limit`. False
    // (having said why on stderr) when a connection could not be opened or
    // the rounds ran out of time.
    bool run(int server_pid, std::chrono::seconds limit, window_result& w);

    // After run(): wall-clock seconds per round, and the answers merged.
    const std::vector<double>& round_seconds() const { return seconds_; }
    double total_seconds() const;
    request_stats totals() const;

protected:
    // On client k's thread: send the first request of round `round`. Every
    // client calls finish_round() once per round, when it is through.
    virtual void start_round(std::size_t k, unsigned round) = 0;
    // An answer to client k during the rounds.
    virtual void on_answer(std::size_t k, const response& r) = 0;

    void finish_round();
    http_connection& conn(std::size_t k) { return *conns_[k]; }
    // Counts client k's answer; a failure is noted as "WHAT K: 404 ...".
    // Returns r.ok().
    bool record(std::size_t k, const response& r, std::string_view what);

private:
    void on_response(http_connection& c, const response& r) final;
    void start_all(unsigned round);

    worker_pool& pool_;
    const unsigned rounds_;
    std::vector<std::unique_ptr<http_connection>> conns_;
    std::vector<std::unique_ptr<request_stats>> stats_;  // per thread
    std::atomic<bool> connecting_{true};
    std::atomic<std::size_t> connect_failures_{0};
    std::atomic<std::size_t> remaining_{0};
    // Written by the client that finishes a round, before it starts the next.
    unsigned round_ = 0;
    bench_clock::time_point round_start_;
    std::vector<double> seconds_;
};

}  // namespace dstream::bench
