// The dstream command: `dstream serve` runs a node.
#include <chrono>
#include <filesystem>
#include <malloc.h>
#include <optional>
#include <thread>
#include <utility>

#include <CLI/CLI.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/signal_set.hpp>
#include <boost/asio/thread_pool.hpp>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include "cli/serve_options.h"
#include "edge/server.h"
#include "log/memory_log.h"
#include "log/node_wal.h"
#include "log/wal_group_log.h"
#include "runtime/node_identity.h"
#include "service/engine.h"
#include "storage/chunk_cache.h"
#include "storage/local_dir_object_store.h"

namespace {

using namespace dstream;

// Cold objects that no stream references (a crash between writing an object
// and logging it, or between a delete and the removal of its objects).
void sweep_orphan_objects(storage::object_store& store, const service::engine& engine) {
    const auto referenced = engine.referenced_object_keys();
    std::size_t removed = 0;
    for (const auto prefix : {service::chunk_key_prefix, service::snapshot_key_prefix}) {
        auto keys = store.list(std::string(prefix));
        if (!keys) {
            spdlog::warn("cannot list cold objects; orphan sweep skipped");
            return;
        }
        for (const auto& key : *keys) {
            if (!referenced.contains(key) && store.remove(key)) ++removed;
        }
    }
    spdlog::info("cold store: {} objects referenced, {} orphans removed", referenced.size(),
                 removed);
}

// Every connection holds a descriptor: take the hard limit rather than the
// soft one a shell leaves (often 1024), so that thousands of clients fit.
rlim_t raise_descriptor_limit() {
    rlimit limit{};
    if (::getrlimit(RLIMIT_NOFILE, &limit) != 0) return 0;
    if (limit.rlim_cur < limit.rlim_max) {
        rlimit raised = limit;
        raised.rlim_cur = limit.rlim_max;
        if (::setrlimit(RLIMIT_NOFILE, &raised) == 0) return raised.rlim_cur;
    }
    return limit.rlim_cur;
}

int run_serve(const cli::serve_options& opts) {
    // Stream blocks are up to 1 MiB: keep them in their own mappings so memory
    // freed by a chunk flush goes back to the system instead of fragmenting
    // the heap (glibc would otherwise raise its mmap threshold as they free).
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    spdlog::set_level(spdlog::level::from_str(opts.log_level));
    const rlim_t descriptors = raise_descriptor_limit();
    const auto [host, port] = cli::split_listen(opts.listen);

    edge::edge_options edge_opts;
    edge_opts.idle_timeout = std::chrono::seconds(opts.idle_timeout_s);
    edge_opts.body_timeout = std::chrono::seconds(opts.body_timeout_s);
    boost::asio::io_context io(static_cast<int>(opts.threads));
    // Blocking object-store I/O runs here, never on the edge or a group.
    boost::asio::thread_pool io_pool(2);
    std::unique_ptr<log::node_wal> wal;
    std::unique_ptr<storage::local_dir_object_store> store;
    std::unique_ptr<log::checkpoint_files> checkpoints;
    storage::chunk_cache cache(opts.chunk_cache_bytes);
    std::optional<service::engine> engine;

    if (opts.memory) {
        edge_opts.cluster_id = runtime::generate_cluster_id();
        engine.emplace(io, opts.groups, service::cold_tier{}, service::checkpointing{});
        engine->attach_logs([](std::size_t, boost::asio::any_io_executor strand) {
            return std::make_unique<log::memory_log>(std::move(strand));
        });
    } else {
        const std::filesystem::path dir(opts.data_dir);
        const runtime::node_meta meta = runtime::load_or_create_node_meta(dir, opts.groups);
        edge_opts.cluster_id = meta.cluster_id;
        store = std::make_unique<storage::local_dir_object_store>(dir / "objects");
        service::cold_tier cold;
        cold.store = store.get();
        cold.cache = &cache;
        cold.io = io_pool.get_executor();
        cold.group_hot_budget =
            std::max<std::uint64_t>(opts.hot_bytes / meta.group_count, 1u << 20);
        checkpoints = std::make_unique<log::checkpoint_files>(dir / "checkpoints");
        engine.emplace(io, meta.group_count, cold,
                       service::checkpointing{checkpoints.get(), opts.checkpoint_bytes});
        wal =
            std::make_unique<log::node_wal>(log::wal_options{dir / "wal", opts.wal_segment_bytes});
        const auto started = std::chrono::steady_clock::now();
        engine->restore_checkpoints(*checkpoints);
        // A group's log continues past its checkpoint even when recovery
        // finds none of its records (their segments were deleted).
        std::vector<std::uint64_t> last_index(meta.group_count, 0);
        for (std::size_t g = 0; g < meta.group_count; ++g)
            last_index[g] = engine->checkpoint_index(g);
        const log::wal_recovery recovered =
            wal->recover([&](std::uint32_t group, std::uint64_t index, std::string_view record) {
                engine->replay(group, index, record);
                last_index[group] = std::max(last_index[group], index);
            });
        const auto took = std::chrono::duration_cast<std::chrono::milliseconds>(
            std::chrono::steady_clock::now() - started);
        spdlog::info("recovered {} log records ({} bytes, {} segments) in {} ms{}",
                     recovered.records, recovered.bytes, recovered.segments, took.count(),
                     recovered.torn_tail_cut ? "; cut a torn tail" : "");
        engine->attach_logs([&](std::size_t i, boost::asio::any_io_executor strand) {
            return std::make_unique<log::wal_group_log>(*wal, static_cast<std::uint32_t>(i),
                                                        std::move(strand), last_index[i]);
        });
        wal->start();
        engine->release_checkpointed();
        sweep_orphan_objects(*store, *engine);
    }
    engine->start();

    edge::server server(io, *engine, edge_opts);
    server.listen(host, port);
    if (opts.memory) {
        spdlog::warn("dstream listening on {}:{} in MEMORY mode: every stream is lost at exit",
                     host, server.port());
    } else {
        spdlog::info("dstream listening on {}:{}, durable, data dir {}", host, server.port(),
                     opts.data_dir);
    }
    spdlog::info("cluster id {}, {} groups, {} threads, {} descriptors", edge_opts.cluster_id,
                 opts.groups, opts.threads, static_cast<unsigned long>(descriptors));

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
    io_pool.join();
    if (wal) wal->stop();
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
