#pragma once
// Which value each setting takes and where it came from. Precedence:
// flag > environment > config file > preset > default.
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "config/setting.h"

namespace dstream::config {

enum class source { fallback, preset, file, env, flag };

// "default", "preset", "file", "env", "flag".
std::string_view source_name(source s);

// The pseudo-setting that picks a preset: `--preset`, DSTREAM_PRESET, `preset = ...`.
inline constexpr char preset_key[] = "preset";

// What the command line, the environment and the config file say.
struct inputs {
    // Settings given as flags, by key ("hot_bytes" -> "64MiB"), booleans as
    // "true"; preset_key names the preset.
    std::map<std::string, std::string> flags;
    std::string config_file;  // empty: none
    // Looks up an environment variable (none: no environment); tests pass their own.
    std::function<std::optional<std::string>(const std::string& name)> env;
};

struct effective_value {
    setting about;
    value v;
    source from = source::fallback;
};

struct effective {
    std::string preset;  // empty: none
    source preset_from = source::fallback;
    std::string config_file;
    std::vector<effective_value> values;  // in the table's order
};

// Every value given is checked, also one that a higher source overrides.
// Throws invalid_setting for a bad value, an unknown preset, a config file
// that does not parse or that names a key the table does not have.
effective resolve(const std::vector<setting>& table, const std::vector<preset>& presets,
                  const inputs& in);

// Writes every effective value into the field its setting is bound to.
void store(const effective& e);

}  // namespace dstream::config
