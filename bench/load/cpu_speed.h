// `dstream-bench cpu-speed`: how fast each CPU the generator may run on is
// right now, as the time one fixed piece of work takes pinned to it. On a
// virtual machine two vCPUs can differ by 2x, and which is slow changes
// within minutes (the host shares their cores with other work): a server's
// CPU per operation then depends on where it ran, and a comparison reads
// the probe taken before each run beside its figures.
#pragma once

#include <CLI/CLI.hpp>

namespace dstream::bench {

void add_cpu_speed_command(CLI::App& app, int& exit_code);

}  // namespace dstream::bench
