#include "report.h"

#include <cmath>
#include <cstdio>
#include <iostream>

namespace dstream::bench {

std::string json_escape(std::string_view s) {
    std::string out;
    out.reserve(s.size() + 2);
    out.push_back('"');
    for (unsigned char c : s) {
        switch (c) {
            case '"':
                out += "\\\"";
                break;
            case '\\':
                out += "\\\\";
                break;
            case '\n':
                out += "\\n";
                break;
            case '\r':
                out += "\\r";
                break;
            case '\t':
                out += "\\t";
                break;
            default:
                if (c < 0x20) {
                    char buf[8];
                    std::snprintf(buf, sizeof buf, "\\u%04x", c);
                    out += buf;
                } else {
                    out.push_back(static_cast<char>(c));
                }
        }
    }
    out.push_back('"');
    return out;
}

void json_object::key(std::string_view k) {
    if (!first_) text_.push_back(',');
    first_ = false;
    text_ += json_escape(k);
    text_.push_back(':');
}

json_object& json_object::add(std::string_view k, std::string_view value) {
    key(k);
    text_ += json_escape(value);
    return *this;
}

json_object& json_object::add(std::string_view k, double value, int decimals) {
    key(k);
    if (!std::isfinite(value)) {
        text_ += "null";
        return *this;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", decimals, value);
    text_ += buf;
    return *this;
}

json_object& json_object::add(std::string_view k, std::uint64_t value) {
    key(k);
    text_ += std::to_string(value);
    return *this;
}

json_object& json_object::add(std::string_view k, std::int64_t value) {
    key(k);
    text_ += std::to_string(value);
    return *this;
}

json_object& json_object::add(std::string_view k, bool value) {
    key(k);
    text_ += value ? "true" : "false";
    return *this;
}

json_object& json_object::add_null(std::string_view k) {
    key(k);
    text_ += "null";
    return *this;
}

json_object& json_object::add_raw(std::string_view k, std::string_view json) {
    key(k);
    text_ += json;
    return *this;
}

std::string latency_json(const histogram& h) {
    json_object j;
    const auto us = [](std::uint64_t ns) { return static_cast<double>(ns) / 1000.0; };
    j.add("p50", us(h.percentile(50)), 1)
        .add("p90", us(h.percentile(90)), 1)
        .add("p99", us(h.percentile(99)), 1)
        .add("p999", us(h.percentile(99.9)), 1)
        .add("max", us(h.max()), 1)
        .add("mean", h.mean() / 1000.0, 1);
    return j.str();
}

std::string format_ns(double ns) {
    char buf[32];
    if (ns < 1e3) {
        std::snprintf(buf, sizeof buf, "%.0f ns", ns);
    } else if (ns < 1e6) {
        std::snprintf(buf, sizeof buf, "%.0f us", ns / 1e3);
    } else if (ns < 1e9) {
        std::snprintf(buf, sizeof buf, "%.2f ms", ns / 1e6);
    } else {
        std::snprintf(buf, sizeof buf, "%.2f s", ns / 1e9);
    }
    return buf;
}

std::string latency_text(const histogram& h) {
    const auto f = [&](double p) { return format_ns(static_cast<double>(h.percentile(p))); };
    return "p50 " + f(50) + "  p90 " + f(90) + "  p99 " + f(99) + "  p99.9 " + f(99.9) + "  max " +
           format_ns(static_cast<double>(h.max())) + "  mean " + format_ns(h.mean());
}

std::string add_cpu_and_server(json_object& j, const window_result& w, std::uint64_t ops,
                               std::string_view op_name) {
    char buf[512];
    std::string text;
    const double secs = w.seconds > 0 ? w.seconds : 1;
    j.add("client_cpu_s", w.client_cpu_s, 3).add("client_cpu_cores", w.client_cpu_s / secs, 3);
    std::snprintf(buf, sizeof buf, "  generator CPU   %.2f s (%.2f cores)\n", w.client_cpu_s,
                  w.client_cpu_s / secs);
    text += buf;
    if (w.server_before && w.server_after) {
        const auto& a = *w.server_before;
        const auto& b = *w.server_after;
        if (a.ok && b.ok) {
            const double cpu = b.cpu_seconds - a.cpu_seconds;
            const double per_op = ops ? cpu * 1e6 / static_cast<double>(ops) : 0.0;
            j.add("server_cpu_s", cpu, 3)
                .add("server_cpu_cores", cpu / secs, 3)
                .add("server_cpu_us_per_" + std::string(op_name), per_op, 2)
                .add("server_rss_peak_kib", b.hwm_kib)
                .add("server_rss_kib", b.rss_kib);
            std::snprintf(buf, sizeof buf,
                          "  server CPU      %.2f s (%.2f cores), %.1f us per %.*s\n"
                          "  server RSS      %.1f MiB now, %.1f MiB peak (VmHWM)\n",
                          cpu, cpu / secs, per_op, static_cast<int>(op_name.size()), op_name.data(),
                          static_cast<double>(b.rss_kib) / 1024.0,
                          static_cast<double>(b.hwm_kib) / 1024.0);
            text += buf;
        } else {
            j.add("server_error", a.ok ? b.error : a.error);
            text += "  server stats    unavailable: " + (a.ok ? b.error : a.error) + "\n";
        }
    }
    return text;
}

std::string status_counts_json(const std::map<int, std::uint64_t>& counts) {
    json_object j;
    for (const auto& [code, n] : counts) j.add(std::to_string(code), n);
    return j.str();
}

void error_log::note(std::string message) {
    ++count;
    if (samples.size() < kKept) samples.push_back(std::move(message));
}

void error_log::merge(const error_log& o) {
    count += o.count;
    for (const auto& m : o.samples) {
        if (samples.size() < kKept) samples.push_back(m);
    }
}

int emit(const json_object& j, std::string_view text, int exit_code) {
    std::cout << j.str() << std::endl;
    std::cerr << text << std::flush;
    return exit_code;
}

std::string add_error_samples(json_object& j, const std::vector<std::string>& samples) {
    if (samples.empty()) return {};
    std::string array = "[";
    std::string text;
    for (std::size_t i = 0; i < samples.size(); ++i) {
        if (i > 0) array.push_back(',');
        array += json_escape(samples[i]);
        text += "  error sample    " + samples[i] + "\n";
    }
    j.add_raw("error_samples", array + "]");
    return text;
}

}  // namespace dstream::bench
