#pragma once
// One row of a configuration table: what the flags, the TOML keys, the
// environment, the start-up checks and the generated docs all read, so that
// none of them can disagree about a name, a default or a bound.
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <variant>
#include <vector>

namespace dstream::config {

using value = std::variant<bool, std::uint64_t, std::string>;

// How an integer is written for people; byte sizes also accept suffixes.
enum class unit { count, bytes, seconds };

constexpr std::uint64_t kib(std::uint64_t n) { return n << 10; }
constexpr std::uint64_t mib(std::uint64_t n) { return n << 20; }
constexpr std::uint64_t gib(std::uint64_t n) { return n << 30; }
constexpr std::uint64_t tib(std::uint64_t n) { return n << 40; }

struct setting {
    std::string key;  // the TOML key; the flag and the environment variable derive from it
    value fallback;   // the default
    std::uint64_t min = 0;
    std::uint64_t max = 0;
    unit shown_as = unit::count;
    std::vector<std::string> choices;  // a text setting limited to these values
    // Why a text value is unusable, or empty when it is fine.
    std::function<std::string(const std::string&)> check;
    std::string help;
    std::vector<std::pair<std::string, value>> presets;  // preset name -> its value
    std::function<void(const value&)> store;             // writes the effective value

    // Chained after a builder: the value this setting takes under `preset`.
    setting&& preset(std::string name, value v) &&;
    // Chained after a builder: an extra check of text values.
    setting&& checked_by(std::function<std::string(const std::string&)> why_not) &&;
};

// Start-up refuses to run with it (exit code 2); the message names the
// setting, where the value came from and what the setting accepts.
class invalid_setting : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// A named set of values for some settings (`--preset NAME`).
struct preset {
    std::string name;
    std::string summary;
};

// The builders bind a row to the field that receives its effective value.
setting boolean(std::string key, bool& field, bool fallback, std::string help);
setting text(std::string key, std::string& field, std::string fallback, std::string help);
setting choice(std::string key, std::string& field, std::string fallback,
               std::vector<std::string> choices, std::string help);

template <typename Integer>
setting integer(std::string key, Integer& field, std::uint64_t fallback, std::uint64_t min,
                std::uint64_t max, unit shown_as, std::string help) {
    setting s{.key = std::move(key),
              .fallback = fallback,
              .min = min,
              .max = max,
              .shown_as = shown_as,
              .help = std::move(help)};
    s.store = [&field](const value& v) {
        field = static_cast<Integer>(std::get<std::uint64_t>(v));
    };
    return s;
}

// "hot_bytes" -> "--hot-bytes" and "DSTREAM_HOT_BYTES".
std::string flag_name(const std::string& key);
std::string flag_name(const setting& s);
std::string env_name(const std::string& key);
std::string env_name(const setting& s);

// The value as a person writes it: `256 MiB`, `10 s`, `"info"`, `true`.
std::string describe(const setting& s, const value& v);

// "an integer from 1 MiB to 1 TiB", "one of trace, debug, ...", "true or false".
std::string describe_bounds(const setting& s);

// The value under `preset_name`, or the default when the preset leaves it alone.
const value& value_under(const setting& s, const std::string& preset_name);

}  // namespace dstream::config
