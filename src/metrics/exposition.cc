#include "metrics/exposition.h"

#include <cmath>
#include <iterator>

#include <fmt/format.h>

namespace dstream::metrics {
namespace {

std::string_view type_name(metric_type type) {
    switch (type) {
        case metric_type::counter:
            return "counter";
        case metric_type::gauge:
            return "gauge";
        case metric_type::histogram:
            return "histogram";
    }
    return "untyped";
}

// HELP text escapes backslash and line feed; label values also the quote.
void append_escaped(std::string& out, std::string_view text, bool quote) {
    for (const char c : text) {
        if (c == '\\') {
            out += "\\\\";
        } else if (c == '\n') {
            out += "\\n";
        } else if (quote && c == '"') {
            out += "\\\"";
        } else {
            out += c;
        }
    }
}

// Go's ParseFloat reads what fmt writes (shortest round trip, "1e-05"),
// except the infinities and NaN, which the format spells its own way.
void append_value(std::string& out, double v) {
    if (std::isnan(v)) {
        out += "NaN";
    } else if (std::isinf(v)) {
        out += v > 0 ? "+Inf" : "-Inf";
    } else {
        fmt::format_to(std::back_inserter(out), "{}", v);
    }
}

}  // namespace

void exposition::family(std::string_view name, metric_type type, std::string_view help) {
    fmt::format_to(std::back_inserter(_out), "# HELP {} ", name);
    append_escaped(_out, help, false);
    fmt::format_to(std::back_inserter(_out), "\n# TYPE {} {}\n", name, type_name(type));
}

void exposition::begin_sample(std::string_view name, labels l, const label* extra) {
    _out += name;
    if (l.size() > 0 || extra != nullptr) {
        _out += '{';
        bool first = true;
        const auto add = [&](const label& one) {
            if (!first) _out += ',';
            first = false;
            _out += one.name;
            _out += "=\"";
            append_escaped(_out, one.value, true);
            _out += '"';
        };
        for (const auto& one : l) add(one);
        if (extra != nullptr) add(*extra);
        _out += '}';
    }
    _out += ' ';
}

void exposition::sample(std::string_view name, labels l, std::uint64_t value) {
    begin_sample(name, l);
    fmt::format_to(std::back_inserter(_out), "{}\n", value);
}

void exposition::sample(std::string_view name, labels l, double value) {
    begin_sample(name, l);
    append_value(_out, value);
    _out += '\n';
}

void exposition::buckets(std::string_view name, labels l, const histogram_snapshot& h,
                         double divisor) {
    const std::string bucket = std::string(name) + "_bucket";
    std::uint64_t cumulative = 0;
    std::string le;
    for (std::size_t i = 0; i <= h.bounds.size(); ++i) {
        cumulative += h.counts[i];
        le.clear();
        if (i < h.bounds.size()) {
            append_value(le, static_cast<double>(h.bounds[i]) / divisor);
        } else {
            le = "+Inf";
        }
        const label bound{"le", le};
        begin_sample(bucket, l, &bound);
        fmt::format_to(std::back_inserter(_out), "{}\n", cumulative);
    }
    // _count is the +Inf bucket by definition: both come from the same reads.
    sample(std::string(name) + "_sum", l, static_cast<double>(h.sum) / divisor);
    sample(std::string(name) + "_count", l, cumulative);
}

void exposition::counter(std::string_view name, std::string_view help, std::uint64_t value) {
    family(name, metric_type::counter, help);
    sample(name, {}, value);
}

void exposition::gauge(std::string_view name, std::string_view help, double value) {
    family(name, metric_type::gauge, help);
    sample(name, {}, value);
}

void exposition::histogram(std::string_view name, std::string_view help,
                           const histogram_snapshot& h, double divisor) {
    family(name, metric_type::histogram, help);
    buckets(name, {}, h, divisor);
}

}  // namespace dstream::metrics
