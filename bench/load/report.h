// Output helpers shared by the scenarios: a one-line JSON object builder and
// the latency / CPU / server-memory parts every scenario reports the same way.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "histogram.h"
#include "runner.h"

namespace dstream::bench {

class json_object {
public:
    json_object& add(std::string_view key, std::string_view value);
    json_object& add(std::string_view key, const char* value) {
        return add(key, std::string_view(value));
    }
    json_object& add(std::string_view key, const std::string& value) {
        return add(key, std::string_view(value));
    }
    json_object& add(std::string_view key, double value, int decimals = 3);
    json_object& add(std::string_view key, std::uint64_t value);
    json_object& add(std::string_view key, std::int64_t value);
    json_object& add(std::string_view key, int value) {
        return add(key, static_cast<std::int64_t>(value));
    }
    json_object& add(std::string_view key, unsigned value) {
        return add(key, static_cast<std::uint64_t>(value));
    }
    json_object& add(std::string_view key, bool value);
    json_object& add_null(std::string_view key);
    json_object& add_raw(std::string_view key, std::string_view json);  // value already JSON
    std::string str() const { return text_ + "}"; }

private:
    void key(std::string_view k);
    std::string text_ = "{";
    bool first_ = true;
};

std::string json_escape(std::string_view s);

// {"p50":..,"p90":..,"p99":..,"p999":..,"max":..,"mean":..} in microseconds.
std::string latency_json(const histogram& h);
// "p50 1.23 ms  p90 ...": human readable.
std::string latency_text(const histogram& h);
// Nanoseconds as "850 us", "1.23 ms", "2.5 s".
std::string format_ns(double ns);

// Adds client_cpu_s, client_cpu_cores and, when a server was sampled,
// server_cpu_s, server_cpu_cores, server_cpu_us_per_<op_name> (per `ops`),
// server_rss_peak_kib, server_rss_kib. Returns the matching human text lines.
std::string add_cpu_and_server(json_object& j, const window_result& w, std::uint64_t ops,
                               std::string_view op_name);

// Failures counted, the first few kept as text for the report.
struct error_log {
    static constexpr std::size_t kKept = 5;
    std::uint64_t count = 0;
    std::vector<std::string> samples;

    void note(std::string message);
    void merge(const error_log& o);
};

// {"204":123,...}
std::string status_counts_json(const std::map<int, std::uint64_t>& counts);

// Prints the scenario's JSON line on stdout and its text on stderr; returns
// exit_code.
int emit(const json_object& j, std::string_view text, int exit_code);

// Adds "error_samples":[...] when there are samples; returns them as text
// lines ("  error sample    ...").
std::string add_error_samples(json_object& j, const std::vector<std::string>& samples);

}  // namespace dstream::bench
