#pragma once
// `dstream config print` and `dstream config docs`.
#include <vector>

#include "cli/command.h"

namespace dstream::cli {

std::vector<command> add_config_commands(CLI::App& app);

// docs/configuration.md, generated from the settings table.
std::string configuration_docs();

}  // namespace dstream::cli
