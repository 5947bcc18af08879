#include "config/setting.h"

#include <algorithm>
#include <array>
#include <cctype>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace dstream::config {
namespace {

struct named_unit {
    std::uint64_t size;
    const char* name;
};

// Largest first: a value is written in the largest unit that divides it.
constexpr std::array<named_unit, 4> byte_units{
    {{tib(1), "TiB"}, {gib(1), "GiB"}, {mib(1), "MiB"}, {kib(1), "KiB"}}};
constexpr std::array<named_unit, 3> time_units{{{86400, "day"}, {3600, "hour"}, {60, "minute"}}};

std::string describe_integer(unit shown_as, std::uint64_t n) {
    if (n == 0) return "0";
    if (shown_as == unit::bytes) {
        for (const auto& u : byte_units) {
            if (n % u.size == 0) return fmt::format("{} {}", n / u.size, u.name);
        }
        return fmt::format("{} bytes", n);
    }
    if (shown_as == unit::seconds) {
        for (const auto& u : time_units) {
            if (n % u.size == 0) {
                const std::uint64_t k = n / u.size;
                return fmt::format("{} {}{}", k, u.name, k == 1 ? "" : "s");
            }
        }
        return fmt::format("{} s", n);
    }
    return std::to_string(n);
}

}  // namespace

setting&& setting::preset(std::string name, value v) && {
    presets.emplace_back(std::move(name), std::move(v));
    return std::move(*this);
}

setting&& setting::checked_by(std::function<std::string(const std::string&)> why_not) && {
    check = std::move(why_not);
    return std::move(*this);
}

setting boolean(std::string key, bool& field, bool fallback, std::string help) {
    setting s{.key = std::move(key), .fallback = fallback, .help = std::move(help)};
    s.store = [&field](const value& v) { field = std::get<bool>(v); };
    return s;
}

setting text(std::string key, std::string& field, std::string fallback, std::string help) {
    setting s{.key = std::move(key), .fallback = std::move(fallback), .help = std::move(help)};
    s.store = [&field](const value& v) { field = std::get<std::string>(v); };
    return s;
}

setting choice(std::string key, std::string& field, std::string fallback,
               std::vector<std::string> choices, std::string help) {
    setting s = text(std::move(key), field, std::move(fallback), std::move(help));
    s.choices = std::move(choices);
    return s;
}

std::string flag_name(const std::string& key) {
    std::string flag = "--" + key;
    std::replace(flag.begin(), flag.end(), '_', '-');
    return flag;
}

std::string flag_name(const setting& s) { return flag_name(s.key); }

std::string env_name(const std::string& key) {
    std::string env = "DSTREAM_" + key;
    std::transform(env.begin(), env.end(), env.begin(),
                   [](unsigned char c) { return static_cast<char>(std::toupper(c)); });
    return env;
}

std::string env_name(const setting& s) { return env_name(s.key); }

std::string describe(const setting& s, const value& v) {
    if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
    if (const auto* n = std::get_if<std::uint64_t>(&v)) return describe_integer(s.shown_as, *n);
    return fmt::format("\"{}\"", std::get<std::string>(v));
}

std::string describe_bounds(const setting& s) {
    if (std::holds_alternative<bool>(s.fallback)) return "true or false";
    if (std::holds_alternative<std::uint64_t>(s.fallback)) {
        return fmt::format("an integer from {} to {}", describe_integer(s.shown_as, s.min),
                           describe_integer(s.shown_as, s.max));
    }
    if (!s.choices.empty()) return fmt::format("one of {}", fmt::join(s.choices, ", "));
    return "a string";
}

const value& value_under(const setting& s, const std::string& preset_name) {
    for (const auto& [name, v] : s.presets) {
        if (name == preset_name) return v;
    }
    return s.fallback;
}

}  // namespace dstream::config
