// dstream-bench: HTTP load generator for Durable Streams servers.
//
//   dstream-bench append    --url http://127.0.0.1:4437 --streams 500 --connections 64 ...
//   dstream-bench fanout    --url ... --subscribers 1000 --rate 100 ...
//   dstream-bench longpoll  --url ... --streams 500 --rate 2 ...
//   dstream-bench catchup   --url ... --stream-bytes 268435456 --readers 4 ...
//   dstream-bench bootstrap --url ... --streams 100 --snapshot-bytes 1048576 ...
//   dstream-bench cpu-speed (each CPU's speed now, no server)
//
// Each scenario prints one JSON line on stdout ({"scenario":"NAME",...}) and
// a human-readable summary on stderr. See bench/README.md.
#include <iostream>

#include "cpu_speed.h"
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
    dstream::bench::add_cpu_speed_command(app, exit_code);
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
