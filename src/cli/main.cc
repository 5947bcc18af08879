// The dstream command: `dstream serve` runs a node, `dstream config` shows its
// settings, and the client commands talk to a node by stream URL.
#include <chrono>
#include <csignal>
#include <filesystem>
#include <malloc.h>
#include <optional>
#include <utility>

#include <CLI/CLI.hpp>
#include <boost/asio/thread_pool.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>
#include <sys/resource.h>

#include "admin/operator_plane.h"
#include "base/version.h"
#include "cli/client/client_commands.h"
#include "cli/cluster_node.h"
#include "cli/cluster_reads.h"
#include "cli/cold_store.h"
#include "cli/command.h"
#include "cli/config_command.h"
#include "cli/graceful_stop.h"
#include "cli/node_logs.h"
#include "cli/node_metrics.h"
#include "cli/recovery.h"
#include "cli/serve_options.h"
#include "cli/signals.h"
#include "config/cluster_file.h"
#include "edge/openssl_memory.h"
#include "edge/server.h"
#include "log/node_wal.h"
#include "runtime/clock.h"
#include "runtime/io_threads.h"
#include "runtime/node_identity.h"
#include "service/cold_reads.h"
#include "service/engine.h"
#include "service/orphan_sweep.h"
#include "storage/chunk_cache.h"
#include "storage/held_object_store.h"

namespace {

using namespace dstream;

// Streamed cold reads under way at once (service/cold_reads.h); more wait for
// a thread. Each holds a bounded buffer (about 512 KiB), not its range.
constexpr std::size_t streamed_read_threads = 8;

// Cold objects that no stream references, once old enough (orphan_sweep.h),
// and staged snapshot parts past their grace (no stream references a part; a
// younger one may still be committed).
void sweep_orphan_objects(storage::object_store& store, service::engine& engine,
                          std::chrono::seconds grace) {
    const auto referenced = engine.referenced_object_keys();
    const auto swept =
        service::sweep_orphan_objects(store, referenced, grace, runtime::system_clock().wall_ms());
    if (swept) {
        spdlog::info(
            "cold store: {} objects referenced, {} orphans removed, {} younger than the grace "
            "kept",
            referenced.size(), swept->removed, swept->kept_young);
    } else {
        spdlog::warn("cannot list cold objects; orphan sweep skipped");
    }
    engine.sweep_staged_parts();
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
    // Before any other thread starts: they all inherit the blocked signals.
    cli::stop_signals signals;
    // sendfile has no MSG_NOSIGNAL: a client that leaves while a read is sent
    // from a chunk file would raise SIGPIPE and end the process. Ignored, the
    // send fails with EPIPE and only that connection ends.
    std::signal(SIGPIPE, SIG_IGN);
    // Stream blocks are up to 1 MiB: keep them in their own mappings so memory
    // freed by a chunk flush goes back to the system instead of fragmenting
    // the heap (glibc would otherwise raise its mmap threshold as they free).
    mallopt(M_MMAP_THRESHOLD, 256 * 1024);
    spdlog::set_level(spdlog::level::from_str(opts.log_level));
    const rlim_t descriptors = raise_descriptor_limit();
    spdlog::info("descriptor limit {}", static_cast<unsigned long>(descriptors));
    cli::node_metrics::get();

    edge::edge_options edge_opts;
    edge_opts.access_log = opts.access_log;
    edge_opts.idle_timeout = std::chrono::seconds(opts.idle_timeout);
    edge_opts.body_timeout = std::chrono::seconds(opts.body_timeout);
    edge_opts.client_read_bytes_per_second = opts.client_read_bytes_per_second;
    edge_opts.limits = edge::admission_limits{opts.ingress_body_bytes, opts.max_live_reads,
                                              opts.max_live_reads_per_stream};
    runtime::io_threads threads(opts.threads);
    const runtime::io_contexts& io = threads.contexts();
    // Blocking object-store I/O runs here, never on the edge or a group.
    boost::asio::thread_pool io_pool(2);
    std::unique_ptr<log::node_wal> wal;
    std::optional<cli::node_cold_store> cold_store;
    // The cold store as the groups see it: a backup holds off the removal of
    // the objects it copies (storage/held_object_store.h).
    std::optional<storage::held_object_store> held_store;
    std::unique_ptr<log::checkpoint_files> checkpoints;
    std::optional<storage::chunk_cache> cache;
    std::optional<service::cold_read_pool> cold_reads;
    std::optional<service::engine> engine;
    std::unique_ptr<cli::cluster_node> cluster;
    std::string listen = opts.listen;
    std::string admin_listen = opts.admin_listen;
    if (!opts.cluster.empty()) {
        cluster = std::make_unique<cli::cluster_node>(
            io.first(), config::read_cluster_file(opts.cluster),
            static_cast<std::uint32_t>(opts.node_id),
            cli::raft_timing{static_cast<unsigned>(opts.raft_election_ms),
                             static_cast<unsigned>(opts.raft_heartbeat_ms),
                             static_cast<unsigned>(opts.raft_trailing_entries)});
        if (!opts.listen_given) listen = cluster->self().http.text();
        if (!opts.admin_listen_given && cluster->self().admin) {
            admin_listen = cluster->self().admin->text();
        }
        edge_opts.cluster = &cluster->map();
        edge_opts.status = cluster.get();
    }
    const auto [host, port] = cli::split_listen(listen);

    if (opts.memory) {
        edge_opts.cluster_id = runtime::generate_cluster_id();
        engine.emplace(io, opts.groups, service::cold_tier{}, service::checkpointing{});
        engine->attach_logs(cli::memory_logs(io_pool.get_executor()));
    } else {
        const std::filesystem::path dir(opts.data_dir);
        std::optional<runtime::node_meta> member;
        if (cluster) {
            member = runtime::node_meta{cluster->map().cluster_id(), cluster->map().groups(),
                                        static_cast<std::uint32_t>(opts.node_id)};
        }
        const runtime::node_meta meta =
            runtime::load_or_create_node_meta(dir, cluster ? cluster->map().groups() : opts.groups,
                                              posix_file_io(), member ? &*member : nullptr);
        edge_opts.cluster_id = meta.cluster_id;
        storage::object_store& store = cold_store.emplace(opts, dir, meta.cluster_id).store();
        service::cold_tier cold;
        cold.store = &held_store.emplace(store);
        cold.cache = &cache.emplace(opts.chunk_cache_bytes);
        cold.io = io_pool.get_executor();
        if (store.streams_ranges())
            cold.streamed_reads = &cold_reads.emplace(streamed_read_threads);
        cold.group_hot_budget =
            std::max<std::uint64_t>(opts.hot_bytes / meta.group_count, 1u << 20);
        cold.staged_part_grace = std::chrono::seconds(opts.staged_part_grace_seconds);
        checkpoints = std::make_unique<log::checkpoint_files>(dir / "checkpoints");
        engine.emplace(io, meta.group_count, cold,
                       service::checkpointing{true, opts.checkpoint_bytes});
        log::wal_options wal_options{dir / "wal", opts.wal_segment_bytes, opts.wal_sync_threads};
        wal_options.preallocate = opts.wal_preallocate;
        wal = std::make_unique<log::node_wal>(std::move(wal_options));
        const auto voters_of = [&cluster](std::uint32_t group) {
            return cluster ? cluster->voters(group) : cli::single_node_voters(group);
        };
        std::vector<cli::recovered_log> recovered =
            cli::recover(*engine, *checkpoints, *wal, voters_of);
        engine->attach_logs(cli::wal_logs(*wal, *checkpoints, io_pool.get_executor(), recovered,
                                          cli::cluster_logs{cluster.get(), &store}));
        wal->start();
        cli::release_checkpointed(*wal, recovered);
        if (cluster) {
            // The shared prefix holds every group's objects, and this node
            // knows the references of the groups it hosts only.
            spdlog::info("cold store: a cluster's node sweeps no orphans");
        } else {
            sweep_orphan_objects(store, *engine,
                                 std::chrono::seconds(opts.cold_orphan_grace_seconds));
        }
    }
    // Requests about groups this node holds no replica of go to a replica on
    // another node, and the peers' about the groups it hosts come here.
    std::unique_ptr<cli::cluster_reads> peer_reads;
    if (cluster) {
        peer_reads = std::make_unique<cli::cluster_reads>(io.first(), *cluster, *engine);
        engine->set_peer_reads(*peer_reads);
    }
    engine->start();
    // After the groups' starts are posted: a peer's message reaches a started log.
    if (cluster) cluster->start();

    // TLS on the listeners that have a pair; the admin listener has its own
    // and speaks HTTP/1.1 only.
    if (!opts.tls_cert.empty()) {
        edge_opts.tls = std::make_shared<edge::tls_credentials>(
            edge::tls_files{opts.tls_cert, opts.tls_key}, edge::alpn_h2_http11, "client");
    }
    edge::server server(io, *engine, edge_opts);
    server.listen(host, port);
    // The admin listener: the operator routes that change data or read it in
    // bulk, which the client listener refuses (edge/admin_plane.h).
    std::optional<admin::operator_plane> plane;
    std::unique_ptr<edge::server> admin_server;
    std::shared_ptr<edge::tls_credentials> admin_tls;
    std::string admin_where = "off";
    if (admin_listen != "off") {
        plane.emplace(
            admin::plane_inputs{*engine, held_store ? &*held_store : nullptr, edge_opts.cluster_id,
                                opts.node_id, cluster ? &cluster->map() : nullptr,
                                backup::location_options{opts.s3_endpoint, opts.s3_region},
                                runtime::system_clock(), runtime::system_random()});
        edge::edge_options admin_opts = edge_opts;
        admin_opts.admin = &*plane;
        admin_opts.admin_token = opts.admin_token;
        admin_opts.tls = nullptr;
        if (!opts.admin_tls_cert.empty()) {
            admin_opts.tls = std::make_shared<edge::tls_credentials>(
                edge::tls_files{opts.admin_tls_cert, opts.admin_tls_key}, edge::alpn_http11,
                "admin");
        }
        admin_tls = admin_opts.tls;
        admin_server = std::make_unique<edge::server>(io, *engine, admin_opts);
        const auto [admin_host, admin_port] = cli::split_listen(admin_listen);
        try {
            admin_server->listen(admin_host, admin_port);
        } catch (const std::exception& e) {
            throw std::runtime_error(fmt::format(
                "the admin listener cannot listen on {} ({}): give --admin-listen another "
                "address, or off",
                admin_listen, e.what()));
        }
        admin_where = fmt::format("{}:{}", admin_host, admin_server->port());
    }
    if (opts.memory) spdlog::warn("MEMORY mode: every stream is lost at exit");
    spdlog::info(
        "dstream start: version={} listen={}:{} tls={} admin={} admin_tls={} data_dir={} mode={} "
        "groups={} threads={} cluster_id={} cold_store={} access_log={} shutdown_timeout_s={}",
        version(), host, server.port(), edge_opts.tls ? "on" : "off", admin_where,
        admin_tls ? "on" : "off", opts.memory ? "-" : opts.data_dir,
        opts.memory ? std::string("memory")
        : cluster   ? "cluster node " + std::to_string(opts.node_id)
                    : std::string("durable"),
        engine->group_count(), opts.threads, edge_opts.cluster_id,
        cold_store ? cold_store->where() : "-", opts.access_log, opts.shutdown_timeout_seconds);

    // SIGHUP: each TLS listener reloads its certificate and key.
    signals.on_hangup([client_tls = edge_opts.tls, admin_tls] {
        if (!client_tls && !admin_tls) {
            spdlog::info("SIGHUP: no TLS listener, nothing to reload");
            return;
        }
        if (client_tls) client_tls->reload();
        if (admin_tls) admin_tls->reload();
    });
    cli::graceful_stop stop(threads, server, admin_server.get(),
                            std::chrono::seconds(opts.shutdown_timeout_seconds));
    // A cluster's node hands its leaderships over first (for up to 3 s), so
    // that no group waits an election timeout for the node that left.
    signals.on_first([&stop, &cluster](int sig) {
        if (!cluster) {
            stop.begin(sig);
            return;
        }
        spdlog::info("stop: handing over the leaderships of this node's groups");
        cluster->hand_over(std::chrono::seconds(3), [&stop, sig] { stop.begin(sig); });
    });

    threads.run();
    // A copy in flight on the admin plane's thread ends before the frames
    // that wait for it go with the io.
    if (plane) plane->stop();
    if (cluster) cluster->stop();
    if (cold_reads) cold_reads->stop();
    io_pool.join();
    // Whatever the groups logged while draining (a chunk flush, an expiry)
    // is written before the process goes.
    if (wal) wal->stop();
    spdlog::info("dstream stop: drained={} elapsed_ms={} wal_flushed={}", !stop.cut(),
                 stop.elapsed_ms(), wal != nullptr);
    return 0;
}

}  // namespace

int main(int argc, char** argv) {
    // First, before anything reaches OpenSSL (false would only mean that
    // OpenSSL keeps its own functions, which work the same, slower).
    (void)edge::openssl_memory::install();
    CLI::App app{"dstream: durable, replayable, append-only streams over HTTP"};
    app.require_subcommand(1);
    app.footer(
        "Exit codes: 0 done; 1 the server refused the request or the command failed; 2 bad "
        "arguments or configuration; 3 no answer from the server.\n"
        "`dstream COMMAND --help` describes each command.");

    cli::serve_options opts;
    CLI::App* serve = app.add_subcommand("serve", "Run a dstream node")->group("Server");
    const cli::serve_flags serve_inputs(*serve);
    std::vector<cli::command> commands = cli::add_config_commands(app);
    for (auto& c : cli::client::add_client_commands(app)) commands.push_back(std::move(c));

    try {
        app.parse(argc, argv);
    } catch (const CLI::ParseError& e) {
        const int code = app.exit(e);
        return code == 0 ? cli::exit_ok : cli::exit_usage;
    }
    try {
        if (*serve) {
            cli::load_serve_options(opts, serve_inputs.inputs());
            return run_serve(opts);
        }
        for (const auto& c : commands) {
            if (c.app->parsed()) return c.run();
        }
    } catch (const config::invalid_setting& e) {
        fmt::print(stderr, "dstream: {}\n", e.what());
        return cli::exit_usage;
    } catch (const std::exception& e) {
        if (*serve) {
            spdlog::error("{}", e.what());
        } else {
            fmt::print(stderr, "dstream: {}\n", e.what());
        }
        return cli::exit_failure;
    }
    return cli::exit_ok;
}
