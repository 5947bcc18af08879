// What the delivery scenarios (fanout, longpoll) share: a paced writer on
// thread 0, readers spread over the threads (reader k on thread k % T), the
// readers' counters per thread, and the run itself:
//
//   1. every reader starts and reports ready (subscribed at the tail);
//   2. the writer appends through warm-up and the measured window;
//   3. the drain: once the writer has its last answer, each reader stops as
//      soon as it holds every acknowledged message of its stream; what has
//      not arrived within kDrainSeconds counts as missed.
//
// A scenario derives from it and says how a reader starts and stops.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "delivery.h"
#include "paced_writer.h"
#include "runner.h"
#include "scenario.h"

namespace dstream::bench {

class delivery_driver {
public:
    static constexpr int kDrainSeconds = 5;
    static constexpr int kReadySeconds = 60;

    delivery_driver(worker_pool& pool, const run_streams& streams, const common_options& o,
                    const stamped_write_options& w, std::size_t readers);
    virtual ~delivery_driver() = default;
    delivery_driver(const delivery_driver&) = delete;
    delivery_driver& operator=(const delivery_driver&) = delete;

    // Runs steps 1 to 3. False (having said so on stderr) when the readers
    // were not all ready within kReadySeconds.
    bool run(window_result& w);

    // After run(): completes the scenario's JSON line with the run's
    // parameters (url, surface, rate, ...), the delivery report
    // (add_delivery_report), ready_s, ended_early, drained and the CPU and
    // server fields, and emits it after `headline`. Returns 0 when messages
    // were delivered and no reader gave up.
    int report(json_object& j, const window_result& w, std::string_view headline) const;

    delivery_summary summary() const;
    const paced_writer& writer() const { return writer_; }
    double ready_seconds() const { return ready_s_; }

protected:
    // On reader k's thread.
    virtual void start_reader(std::size_t k) = 0;
    virtual void close_reader(std::size_t k) = 0;
    virtual const delivery_log& log_of(std::size_t k) const = 0;

    void reader_ready() { ready_.fetch_add(1, std::memory_order_relaxed); }
    reader_counters& counters_for(std::size_t k) { return *counters_[k % counters_.size()]; }
    // True when reader k has stopped (completed or given up).
    bool done(std::size_t k) const { return done_[k] != 0; }
    // After a reader got data: stops it when the writer is through and the
    // reader holds every acknowledged message.
    void check_complete(std::size_t k);
    // Stops reader k for good after repeated failures.
    void give_up(std::size_t k);

    worker_pool& pool_;
    const run_streams& streams_;
    const common_options& opt_;
    const stamped_write_options& write_opt_;
    run_phase phase_;
    paced_writer writer_;

private:
    void stop(std::size_t k);
    void for_readers_of(unsigned thread, void (delivery_driver::*fn)(std::size_t));

    std::size_t readers_;
    std::vector<std::unique_ptr<reader_counters>> counters_;
    std::vector<std::uint8_t> done_;  // element k written on reader k's thread only
    std::atomic<std::size_t> ready_{0};
    double ready_s_ = 0;
};

}  // namespace dstream::bench
