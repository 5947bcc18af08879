// dstream-bench: HTTP load generator for Durable Streams servers.
//
//   dstream-bench append --url http://127.0.0.1:4437 --streams 500 --connections 64
//                        --body-bytes 1024 --duration 10 [--warmup 2] [--producer]
//                        [--surface bucket|v1] [--server-pid PID] [--threads N]
//
// Each scenario prints one JSON line on stdout ({"scenario":"NAME",...}) and
// a human-readable summary on stderr. See bench/README.md.
#include <iostream>

#include "scenario.h"

int main(int argc, char** argv) {
    CLI::App app{"dstream-bench: load generator for Durable Streams HTTP servers"};
    app.require_subcommand(1);
    int exit_code = 0;
    dstream::bench::add_append_scenario(app, exit_code);
    dstream::bench::add_fanout_scenario(app, exit_code);
    dstream::bench::add_catchup_scenario(app, exit_code);
    dstream::bench::add_longpoll_scenario(app, exit_code);
    dstream::bench::add_bootstrap_scenario(app, exit_code);
    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        std::cerr << "dstream-bench: " << e.what() << "\n";
        return 1;
    }
    return exit_code;
}
