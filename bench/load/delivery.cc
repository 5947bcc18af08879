#include "delivery.h"

#include <algorithm>
#include <cstdio>

namespace dstream::bench {

void reader_counters::merge(const reader_counters& o) {
    latency.merge(o.latency);
    deliveries += o.deliveries;
    in_window += o.in_window;
    duplicates += o.duplicates;
    malformed += o.malformed;
    reconnects += o.reconnects;
    gave_up += o.gave_up;
    read_errors.merge(o.read_errors);
}

void delivery_summary::add_reader(const delivery_log& log) {
    ++readers;
    const std::uint64_t m = log.missed();
    missed += m;
    if (m > 0) ++readers_with_missed;
    max_missed = std::max(max_missed, m);
    counters.malformed += log.malformed_stamps();
}

std::string add_delivery_report(json_object& j, const delivery_summary& d,
                                const paced_writer::totals& w, double window_s) {
    const double secs = window_s > 0 ? window_s : 1;
    const reader_counters& c = d.counters;
    j.add("messages_sent", w.sent)
        .add("messages_acked", w.acked)
        .add("messages_in_window", w.sent_in_window)
        .add("messages_per_s", static_cast<double>(w.sent_in_window) / secs, 1)
        .add("write_errors", w.errors)
        .add("write_transport_errors", w.transport_errors)
        .add("writes_unanswered", w.unanswered)
        .add("writer_max_lag_ms", w.max_lag_ms, 2)
        .add("deliveries", c.in_window)
        .add("deliveries_total", c.deliveries)
        .add("deliveries_per_s", static_cast<double>(c.in_window) / secs, 1)
        .add_raw("latency_us", latency_json(c.latency))
        .add("missed", d.missed)
        .add("readers_with_missed", d.readers_with_missed)
        .add("max_missed_per_reader", d.max_missed)
        .add("duplicates", c.duplicates)
        .add("malformed", c.malformed)
        .add("read_errors", c.read_errors.count)
        .add("reconnects", c.reconnects)
        .add("readers_gave_up", c.gave_up);
    std::vector<std::string> samples = w.samples;
    samples.insert(samples.end(), c.read_errors.samples.begin(), c.read_errors.samples.end());
    const std::string samples_text = add_error_samples(j, samples);

    char buf[512];
    std::string text;
    std::snprintf(
        buf, sizeof buf,
        "  messages        %llu written (%llu in the window, %.1f/s), %llu acknowledged, "
        "%llu non-2xx, %llu transport errors, %llu unanswered at the end, writer lag "
        "up to %.2f ms\n",
        static_cast<unsigned long long>(w.sent), static_cast<unsigned long long>(w.sent_in_window),
        static_cast<double>(w.sent_in_window) / secs, static_cast<unsigned long long>(w.acked),
        static_cast<unsigned long long>(w.errors),
        static_cast<unsigned long long>(w.transport_errors),
        static_cast<unsigned long long>(w.unanswered), w.max_lag_ms);
    text += buf;
    std::snprintf(
        buf, sizeof buf,
        "  deliveries      %llu of messages written in the window (%.0f/s), %llu in all\n",
        static_cast<unsigned long long>(c.in_window), static_cast<double>(c.in_window) / secs,
        static_cast<unsigned long long>(c.deliveries));
    text += buf;
    text += "  latency         " + latency_text(c.latency) + "\n";
    std::snprintf(buf, sizeof buf,
                  "  missed          %llu (by %llu of %llu readers, at most %llu by one), "
                  "%llu duplicates, %llu malformed\n",
                  static_cast<unsigned long long>(d.missed),
                  static_cast<unsigned long long>(d.readers_with_missed),
                  static_cast<unsigned long long>(d.readers),
                  static_cast<unsigned long long>(d.max_missed),
                  static_cast<unsigned long long>(c.duplicates),
                  static_cast<unsigned long long>(c.malformed));
    text += buf;
    std::snprintf(
        buf, sizeof buf, "  reads           %llu errors, %llu reconnects, %llu readers gave up\n",
        static_cast<unsigned long long>(c.read_errors.count),
        static_cast<unsigned long long>(c.reconnects), static_cast<unsigned long long>(c.gave_up));
    text += buf;
    return text + samples_text;
}

}  // namespace dstream::bench
