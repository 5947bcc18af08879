// The reading side of the delivery scenarios (fanout, longpoll): what one
// reader has seen of one stream, the latency of each (reader, message) pair,
// and the report of it all against what the writer got acknowledged.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "histogram.h"
#include "paced_writer.h"
#include "report.h"
#include "seq_set.h"
#include "stamp.h"

namespace dstream::bench {

// The readers' counters of one generator thread (only that thread writes them).
struct alignas(64) reader_counters {
    histogram latency;             // messages stamped in the window, first delivery
    std::uint64_t deliveries = 0;  // (reader, message) pairs, first delivery, whole run
    std::uint64_t in_window = 0;   // those stamped in the window
    std::uint64_t duplicates = 0;  // a message a reader had seen already
    std::uint64_t malformed = 0;   // '#' that began no stamp, or a number out of range
    std::uint64_t reconnects = 0;  // reads started again after the server ended one
    std::uint64_t gave_up = 0;     // readers stopped after repeated failures
    error_log read_errors;         // non-2xx answers and transport failures of reads

    void merge(const reader_counters& o);
};

// One reader of one stream.
class delivery_log {
public:
    delivery_log(const paced_writer& writer, std::size_t stream, reader_counters& counters)
        : writer_(writer), stream_(stream), counters_(counters), seen_(writer.capacity()) {}

    // Bytes of the stream as they arrive, in any framing.
    void feed(std::string_view bytes) {
        const std::uint64_t now = stamp_now_ns();
        const std::uint64_t window_start =
            writer_.window_start_ns().load(std::memory_order_acquire);
        scanner_.feed(bytes, [&](std::uint64_t seq, std::uint64_t sent_ns) {
            if (seq >= seen_.capacity() || sent_ns > now) {
                ++counters_.malformed;
                return;
            }
            if (!seen_.insert(seq)) {
                ++counters_.duplicates;
                return;
            }
            ++counters_.deliveries;
            if (sent_ns >= window_start) {
                ++counters_.in_window;
                counters_.latency.record(now - sent_ns);
            }
        });
    }

    // Once the writer has finished: whether every acknowledged message is here.
    bool complete() const { return seen_.size() >= writer_.acked(stream_).size(); }
    std::uint64_t missed() const { return seen_.missing_of(writer_.acked(stream_)); }
    std::uint64_t malformed_stamps() const { return scanner_.malformed(); }

private:
    const paced_writer& writer_;
    std::size_t stream_;
    reader_counters& counters_;
    seq_set seen_;
    stamp_scanner scanner_;
};

struct delivery_summary {
    reader_counters counters;
    std::uint64_t readers = 0;
    std::uint64_t missed = 0;               // acknowledged messages a reader never saw, summed
    std::uint64_t readers_with_missed = 0;  // readers that missed at least one
    std::uint64_t max_missed = 0;           // by one reader

    void add_reader(const delivery_log& log);
};

// The delivery and writer fields and text lines shared by fanout and
// longpoll: messages_*, deliveries*, latency_us, missed*, duplicates, ...
std::string add_delivery_report(json_object& j, const delivery_summary& d,
                                const paced_writer::totals& w, double window_s);

}  // namespace dstream::bench
