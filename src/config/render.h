#pragma once
// The configuration for people: the effective values as TOML (`dstream config
// print`) and the table as Markdown (`dstream config docs`).
#include <string>
#include <vector>

#include "config/resolve.h"
#include "config/setting.h"

namespace dstream::config {

// TOML that `--config` reads back, each line commented with its source.
std::string render_toml(const effective& e);

// One row per setting: key, flag, environment variable, default, bounds, help.
std::string render_settings_markdown(const std::vector<setting>& table);

// One row per setting that some preset changes, one column per preset.
std::string render_presets_markdown(const std::vector<setting>& table,
                                    const std::vector<preset>& presets);

}  // namespace dstream::config
