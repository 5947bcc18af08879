#include "cli/client/client_commands.h"

namespace dstream::cli::client {

std::vector<command> add_client_commands(CLI::App& app) {
    std::vector<command> out;
    add_write_commands(app, out);
    add_read_commands(app, out);
    add_snapshot_commands(app, out);
    add_cluster_commands(app, out);
    add_backup_commands(app, out);
    return out;
}

}  // namespace dstream::cli::client
