#include "delivery_driver.h"

#include <cstdio>
#include <iostream>

#include <boost/asio/post.hpp>

#include "report.h"

namespace dstream::bench {

namespace {
// How long the writer's schedule may run past warm-up and window: the phase
// changes a little after the window's nominal end.
constexpr double kScheduleSlackSeconds = 1;
}  // namespace

delivery_driver::delivery_driver(worker_pool& pool, const run_streams& streams,
                                 const common_options& o, const stamped_write_options& w,
                                 std::size_t readers)
    : pool_(pool),
      streams_(streams),
      opt_(o),
      write_opt_(w),
      writer_(pool.ioc(0), streams.where, streams.paths, o.content_type, w, phase_,
              o.warmup_s + o.duration_s + kScheduleSlackSeconds),
      readers_(readers),
      done_(readers, 0) {
    for (unsigned i = 0; i < pool.size(); ++i) {
        counters_.push_back(std::make_unique<reader_counters>());
    }
    writer_.on_finished = [this] {
        pool_.post_all(
            [this](unsigned thread) { for_readers_of(thread, &delivery_driver::check_complete); });
    };
}

bool delivery_driver::run(window_result& w) {
    for (std::size_t k = 0; k < readers_; ++k) {
        asio::post(pool_.ioc(k), [this, k] { start_reader(k); });
    }
    const auto t0 = bench_clock::now();
    const bool ready =
        run_until_ready(pool_, ready_, readers_, std::chrono::seconds(kReadySeconds));
    ready_s_ = std::chrono::duration<double>(bench_clock::now() - t0).count();
    if (!ready) {
        std::cerr << "dstream-bench: " << ready_.load() << " of " << readers_
                  << " readers were ready within " << kReadySeconds << " s\n";
        for (const auto& m : summary().counters.read_errors.samples) std::cerr << "  " << m << "\n";
        return false;
    }
    writer_.start();
    window_options wo = opt_.window();
    wo.drain_s = kDrainSeconds;
    w = run_measured(pool_, phase_, wo, [this](unsigned thread) {
        for_readers_of(thread, &delivery_driver::stop);
        if (thread == 0) writer_.abort();
    });
    return true;
}

delivery_summary delivery_driver::summary() const {
    delivery_summary d;
    for (const auto& c : counters_) d.counters.merge(*c);
    for (std::size_t k = 0; k < readers_; ++k) d.add_reader(log_of(k));
    return d;
}

int delivery_driver::report(json_object& j, const window_result& w,
                            std::string_view headline) const {
    add_run_fields(j, opt_, streams_);
    j.add("rate", write_opt_.rate, 2)
        .add("body_bytes", static_cast<std::uint64_t>(write_opt_.body_bytes))
        .add("writers", write_opt_.writers)
        .add("setup_s", streams_.setup_s, 3)
        .add("ready_s", ready_s_, 3)
        .add("warmup_s", opt_.warmup_s, 3)
        .add("window_s", w.seconds, 3);
    char buf[160];
    std::snprintf(buf, sizeof buf,
                  "  window          %.2f s after %.2f s warm-up (set-up %.2f s, readers ready in "
                  "%.2f s)\n",
                  w.seconds, opt_.warmup_s, streams_.setup_s, ready_s_);
    const delivery_summary d = summary();
    std::string text = std::string(headline) + buf;
    text += add_delivery_report(j, d, writer_.result(), w.seconds);
    // The writer's own wait, beside its readers' (a writer must not queue
    // behind the fan-out of its own appends).
    j.add_raw("write_latency_us", latency_json(writer_.result().write_latency));
    text += "  write latency   " + latency_text(writer_.result().write_latency) + "\n";
    j.add("ended_early", w.ended_early).add("drained", w.drained);
    text += add_cpu_and_server(j, w, d.counters.in_window, "delivery");
    if (!w.drained) {
        text += "  WARNING: readers still lacked messages " + std::to_string(kDrainSeconds) +
                " s after the last append\n";
    }
    // Without readers (the writer's baseline), the appends are what counts.
    const bool delivered = readers_ == 0 ? writer_.result().acked > 0 : d.counters.deliveries > 0;
    return emit(j, text, delivered && d.counters.gave_up == 0 ? 0 : 1);
}

void delivery_driver::check_complete(std::size_t k) {
    if (!done(k) && writer_.finished() && log_of(k).complete()) stop(k);
}

void delivery_driver::give_up(std::size_t k) {
    if (done(k)) return;
    ++counters_for(k).gave_up;
    stop(k);
}

void delivery_driver::stop(std::size_t k) {
    done_[k] = 1;
    close_reader(k);
}

void delivery_driver::for_readers_of(unsigned thread, void (delivery_driver::*fn)(std::size_t)) {
    for (std::size_t k = thread; k < readers_; k += pool_.size()) (this->*fn)(k);
}

}  // namespace dstream::bench
