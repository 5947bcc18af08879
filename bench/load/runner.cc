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

    if (opt.server_pid > 0) r.server_before = sample_process(opt.server_pid);
    const double cpu0 = self_cpu_seconds();
    const auto t0 = bench_clock::now();
    ph.set(phase::measuring);

    const auto end = t0 + duration_cast<bench_clock::duration>(duration<double>(opt.duration_s));
    if (!r.ended_early && pool.wait_until(end)) r.ended_early = true;

    ph.set(phase::stopping);
    const auto t1 = bench_clock::now();
    const double cpu1 = self_cpu_seconds();
    if (opt.server_pid > 0) r.server_after = sample_process(opt.server_pid);
    r.seconds = duration<double>(t1 - t0).count();
    r.client_cpu_s = cpu1 - cpu0;

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

}  // namespace dstream::bench
