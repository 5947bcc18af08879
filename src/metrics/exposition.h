#pragma once
// The Prometheus text exposition format, version 0.0.4: what a scrape of
// /__ursula/metrics returns. A collector writes whole families: one
// family() call, then its samples.
#include <cstdint>
#include <initializer_list>
#include <string>
#include <string_view>

#include "metrics/histogram.h"

namespace dstream::metrics {

inline constexpr char exposition_content_type[] = "text/plain; version=0.0.4; charset=utf-8";

enum class metric_type { counter, gauge, histogram };

struct label {
    std::string_view name;
    std::string_view value;
};
using labels = std::initializer_list<label>;

class exposition {
public:
    // `# HELP` and `# TYPE` lines.
    void family(std::string_view name, metric_type type, std::string_view help);
    void sample(std::string_view name, labels l, std::uint64_t value);
    void sample(std::string_view name, labels l, double value);
    // The `_bucket` (cumulative, ending in le="+Inf"), `_sum` and `_count`
    // samples of `name`. Bounds and sum are divided by `divisor`, so that a
    // histogram kept in microseconds is exported in seconds.
    void buckets(std::string_view name, labels l, const histogram_snapshot& h, double divisor = 1);

    // A family of one sample without labels.
    void counter(std::string_view name, std::string_view help, std::uint64_t value);
    void gauge(std::string_view name, std::string_view help, double value);
    void histogram(std::string_view name, std::string_view help, const histogram_snapshot& h,
                   double divisor = 1);

    const std::string& text() const { return _out; }

private:
    // `name{l...,extra}` and the space before the value.
    void begin_sample(std::string_view name, labels l, const label* extra = nullptr);

    std::string _out;
};

}  // namespace dstream::metrics
