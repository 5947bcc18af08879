// Threads and the measured window shared by every scenario.
//
// A worker_pool owns one single-threaded io_context per thread; a scenario
// spreads its connections over them (connection k on context k % threads)
// and keeps all per-thread counters thread-local, so the hot path takes no
// lock. run_measured() drives the phases from the calling thread: warm-up,
// measured window (samples taken at both edges), stop, drain.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "http_client.h"
#include "proc_stats.h"

namespace dstream::bench {

class worker_pool {
public:
    explicit worker_pool(unsigned threads);
    ~worker_pool();
    worker_pool(const worker_pool&) = delete;
    worker_pool& operator=(const worker_pool&) = delete;

    unsigned size() const { return static_cast<unsigned>(contexts_.size()); }
    asio::io_context& ioc(std::size_t i) { return *contexts_[i % contexts_.size()]; }

    // Restarts every io_context and runs each on a new thread until it runs
    // out of work.
    void start();
    // Waits until every thread's run() has returned or the deadline passes;
    // true when all have returned.
    bool wait_until(bench_clock::time_point deadline);
    // Runs fn(i) on io_context i's own thread, for every i.
    void post_all(const std::function<void(unsigned)>& fn);
    void stop_all();
    void join();

    // start(), then wait up to `limit`; on time-out post abort(i) to every
    // context (close the sockets), wait `grace`, then stop them. Joins.
    // True when everything finished within `limit`.
    bool run_to_completion(std::chrono::milliseconds limit,
                           const std::function<void(unsigned)>& abort,
                           std::chrono::milliseconds grace = std::chrono::seconds(3));

private:
    std::vector<std::unique_ptr<asio::io_context>> contexts_;
    std::vector<std::thread> threads_;
    std::atomic<unsigned> running_{0};
    std::mutex mu_;
    std::condition_variable cv_;
};

// What the connections look at to know whether to record and whether to go on.
enum class phase : int { warmup = 0, measuring = 1, stopping = 2 };

struct run_phase {
    std::atomic<int> value{static_cast<int>(phase::warmup)};
    bool measuring() const {
        return value.load(std::memory_order_relaxed) == static_cast<int>(phase::measuring);
    }
    bool stopping() const {
        return value.load(std::memory_order_relaxed) == static_cast<int>(phase::stopping);
    }
    void set(phase p) { value.store(static_cast<int>(p), std::memory_order_relaxed); }
};

struct window_options {
    double warmup_s = 2;
    double duration_s = 10;
    int server_pid = 0;   // 0: do not sample a server
    double drain_s = 10;  // how long in-flight requests may take after the window
};

struct window_result {
    double seconds = 0;       // measured window, wall clock
    double client_cpu_s = 0;  // this process's CPU over the window
    std::optional<process_sample> server_before, server_after;
    bool ended_early = false;  // every connection stopped before the window ended
    bool drained = true;       // in-flight requests finished within drain_s
};

// Starts the pool (the scenario must already have posted its first work),
// sets the phase at the window's edges, samples CPU, stops, drains, joins.
window_result run_measured(worker_pool& pool, run_phase& ph, const window_options& opt,
                           const std::function<void(unsigned)>& abort);

// For work that is measured from start to end rather than over a window:
// run_to_completion() with the samples of a window taken at its edges
// (ended_early and drained stay at their defaults; a time-out clears drained).
window_result run_sampled(worker_pool& pool, int server_pid, std::chrono::milliseconds limit,
                          const std::function<void(unsigned)>& abort);

// Starts the pool and waits until `ready` reaches `want` (connections
// subscribed, say), every thread ran out of work, or `limit` passed; then
// stops the contexts and joins without cancelling anything, so the pending
// operations go on at the next start(). True when `ready` reached `want`.
bool run_until_ready(worker_pool& pool, const std::atomic<std::size_t>& ready, std::size_t want,
                     std::chrono::milliseconds limit);

}  // namespace dstream::bench
