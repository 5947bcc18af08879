#include "round_driver.h"

#include <iostream>

#include <boost/asio/post.hpp>

namespace dstream::bench {

void request_stats::merge(const request_stats& o) {
    latency.merge(o.latency);
    requests += o.requests;
    body_bytes += o.body_bytes;
    errors.merge(o.errors);
}

round_driver::round_driver(worker_pool& pool, const target& t, std::size_t clients, unsigned rounds)
    : pool_(pool), rounds_(rounds) {
    for (std::size_t k = 0; k < clients; ++k) {
        auto c = std::make_unique<http_connection>(pool.ioc(k), t, *this);
        c->tag = k;
        conns_.push_back(std::move(c));
    }
    for (unsigned i = 0; i < pool.size(); ++i) stats_.push_back(std::make_unique<request_stats>());
    seconds_.reserve(rounds);
}

double round_driver::total_seconds() const {
    double total = 0;
    for (const double s : seconds_) total += s;
    return total;
}

request_stats round_driver::totals() const {
    request_stats t;
    for (const auto& s : stats_) t.merge(*s);
    return t;
}

bool round_driver::record(std::size_t k, const response& r, std::string_view what) {
    request_stats& s = *stats_[k % stats_.size()];
    ++s.requests;
    if (!r.ok()) {
        s.errors.note(std::string(what) + " " + std::to_string(k) + ": " + describe_failure(r));
        return false;
    }
    s.latency.record(r.latency_ns());
    s.body_bytes += r.body_bytes;
    return true;
}

bool round_driver::run(int server_pid, std::chrono::seconds limit, window_result& w) {
    const auto close_all = [this](unsigned thread) {
        for (std::size_t k = thread; k < conns_.size(); k += pool_.size()) conns_[k]->close();
    };
    for (auto& c : conns_) {
        http_connection* p = c.get();
        asio::post(pool_.ioc(p->tag), [p] { p->connect(); });
    }
    if (!pool_.run_to_completion(std::chrono::seconds(30), close_all) ||
        connect_failures_.load() > 0) {
        std::cerr << "dstream-bench: " << connect_failures_.load() << " of " << conns_.size()
                  << " connections could not be opened in 30 s\n";
        return false;
    }
    connecting_ = false;
    start_all(0);
    w = run_sampled(pool_, server_pid, limit, close_all);
    if (!w.drained) {
        std::cerr << "dstream-bench: the rounds took more than " << limit.count() << " s\n";
        return false;
    }
    return true;
}

void round_driver::start_all(unsigned round) {
    round_ = round;
    remaining_.store(conns_.size());
    round_start_ = bench_clock::now();
    for (std::size_t k = 0; k < conns_.size(); ++k) {
        asio::post(pool_.ioc(k), [this, k, round] { start_round(k, round); });
    }
}

void round_driver::finish_round() {
    if (remaining_.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
    seconds_.push_back(std::chrono::duration<double>(bench_clock::now() - round_start_).count());
    if (round_ + 1 < rounds_) start_all(round_ + 1);
}

void round_driver::on_response(http_connection& c, const response& r) {
    if (connecting_.load(std::memory_order_relaxed)) {
        if (r.ec) ++connect_failures_;
        return;
    }
    on_answer(c.tag, r);
}

}  // namespace dstream::bench
