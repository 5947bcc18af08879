#include "runner.h"

#include <boost/asio/post.hpp>

namespace dstream::bench {

worker_pool::worker_pool(unsigned threads) {
    if (threads == 0) threads = 1;
    for (unsigned i = 0; i < threads; ++i)
        contexts_.push_back(std::make_unique<asio::io_context>(1));
}

worker_pool::~worker_pool() {
    stop_all();
    join();
}

void worker_pool::start() {
    join();
    running_ = size();
    for (unsigned i = 0; i < size(); ++i) {
        contexts_[i]->restart();
        threads_.emplace_back([this, i] {
            contexts_[i]->run();
            std::lock_guard lock(mu_);
            --running_;
            cv_.notify_all();
        });
    }
}

bool worker_pool::wait_until(bench_clock::time_point deadline) {
    std::unique_lock lock(mu_);
    return cv_.wait_until(lock, deadline, [this] { return running_ == 0; });
}

void worker_pool::post_all(const std::function<void(unsigned)>& fn) {
    for (unsigned i = 0; i < size(); ++i) {
        asio::post(*contexts_[i], [fn, i] { fn(i); });
    }
}

void worker_pool::stop_all() {
    for (auto& c : contexts_) c->stop();
}

void worker_pool::join() {
    for (auto& t : threads_) {
        if (t.joinable()) t.join();
    }
    threads_.clear();
}

bool worker_pool::run_to_completion(std::chrono::milliseconds limit,
                                    const std::function<void(unsigned)>& abort,
                                    std::chrono::milliseconds grace) {
    start();
    bool in_time = wait_until(bench_clock::now() + limit);
    if (!in_time) {
        post_all(abort);
        if (!wait_until(bench_clock::now() + grace)) stop_all();
    }
    join();
    return in_time;
}

namespace {

// CPU of this process and of the server between begin() and end().
class window_sampler {
public:
    window_sampler(int server_pid, window_result& r) : pid_(server_pid), r_(r) {}

    void begin() {
        if (pid_ > 0) r_.server_before = sample_process(pid_);
        cpu0_ = self_cpu_seconds();
        t0_ = bench_clock::now();
    }

    void end() {
        const auto t1 = bench_clock::now();
        const double cpu1 = self_cpu_seconds();
        if (pid_ > 0) r_.server_after = sample_process(pid_);
        r_.seconds = std::chrono::duration<double>(t1 - t0_).count();
        r_.client_cpu_s = cpu1 - cpu0_;
    }

    bench_clock::time_point started() const { return t0_; }

private:
    int pid_;
    window_result& r_;
    double cpu0_ = 0;
    bench_clock::time_point t0_;
};

}  // namespace

window_result run_measured(worker_pool& pool, run_phase& ph, const window_options& opt,
                           const std::function<void(unsigned)>& abort) {
    using namespace std::chrono;
    window_result r;
    ph.set(phase::warmup);
    const auto t_begin = bench_clock::now();
    pool.start();

    const auto warm_end =
        t_begin + duration_cast<bench_clock::duration>(duration<double>(opt.warmup_s));
    if (pool.wait_until(warm_end)) r.ended_early = true;

    window_sampler sampler(opt.server_pid, r);
    sampler.begin();
    ph.set(phase::measuring);

    const auto end =
        sampler.started() + duration_cast<bench_clock::duration>(duration<double>(opt.duration_s));
    if (!r.ended_early && pool.wait_until(end)) r.ended_early = true;

    ph.set(phase::stopping);
    sampler.end();

    const auto drain_end =
        bench_clock::now() + duration_cast<bench_clock::duration>(duration<double>(opt.drain_s));
    if (!pool.wait_until(drain_end)) {
        r.drained = false;
        pool.post_all(abort);
        if (!pool.wait_until(bench_clock::now() + seconds(3))) pool.stop_all();
    }
    pool.join();
    return r;
}

window_result run_sampled(worker_pool& pool, int server_pid, std::chrono::milliseconds limit,
                          const std::function<void(unsigned)>& abort) {
    window_result r;
    window_sampler sampler(server_pid, r);
    sampler.begin();
    r.drained = pool.run_to_completion(limit, abort);
    sampler.end();
    return r;
}

bool run_until_ready(worker_pool& pool, const std::atomic<std::size_t>& ready, std::size_t want,
                     std::chrono::milliseconds limit) {
    pool.start();
    const auto deadline = bench_clock::now() + limit;
    while (ready.load() < want && bench_clock::now() < deadline) {
        if (pool.wait_until(bench_clock::now() + std::chrono::milliseconds(5))) break;
    }
    pool.stop_all();
    pool.join();
    return ready.load() >= want;
}

}  // namespace dstream::bench
