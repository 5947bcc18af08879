#pragma once
// The client commands of `dstream`, which talk to a server by stream URL:
// create, append, close, delete, retention, read, tail, head, snapshot
// publish, snapshot read and bootstrap, and cluster status.
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/command.h"

namespace dstream::cli::client {

std::vector<command> add_client_commands(CLI::App& app);

// One per file, by kind.
void add_write_commands(CLI::App& app, std::vector<command>& out);
void add_read_commands(CLI::App& app, std::vector<command>& out);
void add_snapshot_commands(CLI::App& app, std::vector<command>& out);
void add_cluster_commands(CLI::App& app, std::vector<command>& out);
// The operator's: backup create / verify, restore, accept-loss.
void add_backup_commands(CLI::App& app, std::vector<command>& out);

}  // namespace dstream::cli::client
