// The dstream command: `dstream serve` runs a node.
#include <utility>
#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <spdlog/spdlog.h>
#include <thread>

#include "cli/serve_options.h"
#include "edge/server.h"
#include "log/memory_log.h"
#include "runtime/node_identity.h"
#include "service/engine.h"

namespace {

using namespace dstream;

int run_serve(const cli::serve_options& opts) {
    spdlog::set_level(spdlog::level::from_str(opts.log_level));
    const auto [host, port] = cli::split_listen(opts.listen);

    edge::edge_options edge_opts;
    edge_opts.cluster_id = opts.memory ? runtime::generate_cluster_id()
                                       : runtime::load_or_create_cluster_id(opts.data_dir);

    boost::asio::io_context io(static_cast<int>(opts.threads));
    service::engine_options engine_opts;
    engine_opts.group_count = opts.groups;
    engine_opts.make_log = [](std::size_t, boost::asio::any_io_executor strand) {
        return std::make_unique<log::memory_log>(std::move(strand));
    };
    service::engine engine(io, std::move(engine_opts));
    engine.start();

    edge::server server(io, engine, edge_opts);
    server.listen(host, port);
    if (opts.memory) {
        spdlog::warn("dstream listening on {}:{} in MEMORY mode: every stream is lost at exit",
                     host, server.port());
    } else {
        spdlog::warn(
            "dstream listening on {}:{} (data dir {}); the write-ahead log is not built yet: "
            "streams are kept in memory only",
            host, server.port(), opts.data_dir);
    }
    spdlog::info("cluster id {}, {} groups, {} threads", edge_opts.cluster_id, opts.groups,
                 opts.threads);

    boost::asio::signal_set signals(io, SIGINT, SIGTERM);
    signals.async_wait([&](const boost::system::error_code&, int sig) {
        spdlog::info("signal {}: stopping", sig);
        server.stop();
        io.stop();
    });

    std::vector<std::thread> threads;
    for (unsigned i = 1; i < opts.threads; ++i) threads.emplace_back([&io] { io.run(); });
    io.run();
    for (auto& t : threads) t.join();
    spdlog::info("dstream stopped");
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    CLI::App app{"dstream: durable, replayable, append-only streams over HTTP"};
    app.require_subcommand(1);

    cli::serve_options opts;
    CLI::App* serve = app.add_subcommand("serve", "Run a dstream node");
    cli::add_serve_flags(*serve, opts);

    try {
        app.parse(argc, argv);
        if (*serve) {
            cli::apply_config_file(opts);
            return run_serve(opts);
        }
    } catch (const CLI::ParseError& e) {
        return app.exit(e);
    } catch (const std::exception& e) {
        spdlog::error("{}", e.what());
        return 1;
    }
    return 0;
}
