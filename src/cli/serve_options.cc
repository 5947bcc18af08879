#include "cli/serve_options.h"

#include <charconv>
#include <cstdlib>
#include <fstream>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "storage/s3_object_store.h"

namespace dstream::cli {
namespace {

using config::gib;
using config::kib;
using config::mib;
using config::tib;
using config::unit;

std::string check_listen(const std::string& listen) {
    return parse_listen(listen) ? "" : "must be HOST:PORT with a port from 0 to 65535";
}

std::string check_admin_listen(const std::string& listen) {
    return listen == "off" || parse_listen(listen)
               ? ""
               : "must be HOST:PORT with a port from 0 to 65535, or off";
}

std::string check_cold_store(const std::string& url) {
    if (url.empty()) return "";
    const auto location = storage::parse_s3_url(url);
    return location ? "" : "must be empty or s3://BUCKET[/PREFIX]: " + location.err().message;
}

// Credentials come from the environment only: an endpoint's user part
// would put one in a flag, a file or a log line.
std::string check_s3_endpoint(const std::string& url) {
    if (url.empty()) return "";
    const bool web = url.starts_with("http://") || url.starts_with("https://");
    const std::string_view authority = std::string_view(url).substr(url.find("//") + 2);
    const std::string_view host = authority.substr(0, authority.find('/'));
    if (!web || host.empty() || host.find('@') != std::string_view::npos ||
        url.find_first_of(" \t\n") != std::string::npos) {
        return "must be empty (AWS) or http(s)://HOST[:PORT], without credentials";
    }
    return "";
}

// The flag's placeholder in `--help`.
std::string type_name(const config::setting& s) {
    if (!s.choices.empty()) return "{" + fmt::format("{}", fmt::join(s.choices, ",")) + "}";
    if (std::holds_alternative<std::string>(s.fallback)) return "TEXT";
    switch (s.shown_as) {
        case unit::bytes:
            return "BYTES";
        case unit::seconds:
            return "SECONDS";
        case unit::count:
            break;
    }
    return "N";
}

std::optional<std::string> from_environment(const std::string& name) {
    const char* v = std::getenv(name.c_str());
    // An empty variable counts as unset, as shells make unsetting awkward.
    if (v == nullptr || *v == '\0') return std::nullopt;
    return std::string(v);
}

// The token is the file's first line, without its line end; a file that
// cannot be read, or holds no token, stops the start (exit 2).
std::string read_admin_token(const std::string& path) {
    std::ifstream in(path);
    std::string token;
    if (!in || !std::getline(in, token)) {
        throw config::invalid_setting("setting admin_token_file: cannot read " + path);
    }
    while (!token.empty() && (token.back() == '\r' || token.back() == ' ' || token.back() == '\t'))
        token.pop_back();
    if (token.empty() || token.find_first_of(" \t") != std::string::npos) {
        throw config::invalid_setting("setting admin_token_file: " + path +
                                      " must hold the token on its first line, without spaces");
    }
    return token;
}

}  // namespace

std::vector<config::setting> serve_settings(serve_options& o) {
    std::vector<config::setting> table;
    table.push_back(
        config::text("listen", o.listen, "127.0.0.1:4437", "Address to listen on, HOST:PORT")
            .checked_by(check_listen));
    table.push_back(config::text("admin_listen", o.admin_listen, "127.0.0.1:4438",
                                 "Address of the admin listener, HOST:PORT, or off: the operator "
                                 "routes that change data or read it in bulk (backup, restore, "
                                 "accept-loss; docs/operations.md), which the client listener "
                                 "refuses with 404. Keep it on a private address")
                        .checked_by(check_admin_listen));
    table.push_back(config::text("admin_token_file", o.admin_token_file, "",
                                 "A file holding the admin listener's token: every request to it "
                                 "must then carry Authorization: Bearer TOKEN (empty: none)"));
    table.push_back(config::text("tls_cert", o.tls_cert, "",
                                 "A PEM file of the client listener's certificate, then its chain: "
                                 "with --tls-key, the listener speaks HTTPS only (TLS 1.2 and "
                                 "1.3). SIGHUP reloads both files; open connections keep the "
                                 "pair they began with, and a pair that does not load is logged "
                                 "and the previous one kept"));
    table.push_back(config::text("tls_key", o.tls_key, "",
                                 "The PEM file of the private key of --tls-cert (unencrypted)"));
    table.push_back(config::text("admin_tls_cert", o.admin_tls_cert, "",
                                 "The same as --tls-cert, for the admin listener"));
    table.push_back(config::text("admin_tls_key", o.admin_tls_key, "",
                                 "The same as --tls-key, for the admin listener"));
    table.push_back(config::text("data_dir", o.data_dir, "./data",
                                 "Directory for the node's data (docs/disk-format.md)"));
    table.push_back(config::boolean("memory", o.memory, false,
                                    "Keep everything in memory: nothing survives exit"));
    table.push_back(config::integer("threads", o.threads, 2, 1, 256, unit::count, "I/O threads")
                        .preset("small", std::uint64_t{1})
                        .preset("large", std::uint64_t{8}));
    table.push_back(config::integer("groups", o.groups, 16, 1, 4096, unit::count,
                                    "Stream groups (streams hash to groups); a data dir keeps the "
                                    "count of its first start and refuses to start with another")
                        .preset("small", std::uint64_t{4})
                        .preset("large", std::uint64_t{64}));
    table.push_back(config::choice("log_level", o.log_level, "info",
                                   {"trace", "debug", "info", "warn", "error"}, "Log level"));
    table.push_back(config::integer("hot_bytes", o.hot_bytes, mib(256), mib(1), tib(1), unit::bytes,
                                    "Stream bytes kept in memory across all streams before older "
                                    "bytes move to chunk files (durable mode)")
                        .preset("small", mib(32))
                        .preset("large", gib(4)));
    table.push_back(config::integer("chunk_cache_bytes", o.chunk_cache_bytes, mib(64), 0, tib(1),
                                    unit::bytes, "Memory for recently read chunks")
                        .preset("small", mib(8))
                        .preset("large", gib(1)));
    table.push_back(config::integer("checkpoint_bytes", o.checkpoint_bytes, mib(64), kib(64),
                                    tib(1), unit::bytes,
                                    "Log bytes a group writes between checkpoints (bounds replay "
                                    "at restart)")
                        .preset("small", mib(8))
                        .preset("large", mib(256)));
    table.push_back(config::integer("wal_segment_bytes", o.wal_segment_bytes, mib(32), kib(64),
                                    gib(4), unit::bytes,
                                    "Size at which the write-ahead log starts a new segment file")
                        .preset("small", mib(8))
                        .preset("large", mib(128)));
    table.push_back(config::integer(
        "wal_sync_threads", o.wal_sync_threads, 4, 1, 64, unit::count,
        "Most fdatasyncs of the write-ahead log in flight at once. Another starts only once the "
        "newest has run 1 ms, so a fast disk gets one flush at a time (each covering more "
        "writes) and a slow one overlapping flushes"));
    table.push_back(config::boolean(
        "wal_preallocate", o.wal_preallocate, true,
        "Prepare each next write-ahead log segment ahead, zero-filled to --wal-segment-bytes, so "
        "that a flush overwrites allocated blocks instead of growing the file"));
    table.push_back(
        config::boolean("access_log", o.access_log, false, "Write one line per request"));
    table.push_back(config::integer(
        "shutdown_timeout_seconds", o.shutdown_timeout_seconds, 10, 1, 3600, unit::seconds,
        "How long a stop (SIGINT, SIGTERM) waits for requests in flight"));
    table.push_back(config::integer("staged_part_grace_seconds", o.staged_part_grace_seconds, 86400,
                                    1, 30 * 86400, unit::seconds,
                                    "Age after which unused staged snapshot parts are swept"));
    table.push_back(config::integer(
        "cold_orphan_grace_seconds", o.cold_orphan_grace_seconds, 3600, 60, 30 * 86400,
        unit::seconds,
        "Age a cold object must reach before the start-up sweep removes it when nothing "
        "references it (an object whose command never reached the log); younger ones wait "
        "for a later start"));
    table.push_back(config::text("cold_store", o.cold_store, "",
                                 "Where cold bytes go: empty for the directory objects/ under "
                                 "--data-dir, or s3://BUCKET[/PREFIX] (credentials from "
                                 "AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN; "
                                 "docs/operations.md)")
                        .checked_by(check_cold_store));
    table.push_back(config::text("s3_endpoint", o.s3_endpoint, "",
                                 "The S3 server's URL, addressed path-style; empty for AWS itself")
                        .checked_by(check_s3_endpoint));
    table.push_back(config::text("s3_region", o.s3_region, "us-east-1",
                                 "The region requests to S3 are signed for"));
    table.push_back(config::integer("s3_connect_timeout_ms", o.s3_connect_timeout_ms, 5000, 100,
                                    600'000, unit::count,
                                    "Milliseconds an S3 connection may take to open"));
    table.push_back(config::integer("s3_request_timeout_ms", o.s3_request_timeout_ms, 30'000, 1000,
                                    3'600'000, unit::count,
                                    "Milliseconds one S3 request may take in all (a chunk's GET, a "
                                    "part's PUT) before it is retried"));
    table.push_back(config::integer("ingress_body_bytes", o.ingress_body_bytes, mib(256), mib(32),
                                    tib(1), unit::bytes,
                                    "Request bodies the node holds at once (being read or handled; "
                                    "one without Content-Length counts as 32 MiB); past it a "
                                    "request is answered 503 INGRESS_BODY_BYTES_LIMIT_REACHED "
                                    "before its body is read")
                        .preset("small", mib(64))
                        .preset("large", gib(2)));
    table.push_back(config::integer("max_live_reads", o.max_live_reads, 20000, 1, 10'000'000,
                                    unit::count,
                                    "Waiting long-polls and open SSE streams on the node; past it "
                                    "a live read is answered 503 LIVE_READ_BACKPRESSURE")
                        .preset("small", std::uint64_t{2000})
                        .preset("large", std::uint64_t{200000}));
    table.push_back(config::integer("max_live_reads_per_stream", o.max_live_reads_per_stream, 10000,
                                    1, 10'000'000, unit::count,
                                    "The same bound for the live readers of one stream"));
    table.push_back(config::integer(
        "client_read_bytes_per_second", o.client_read_bytes_per_second, 0, 0, tib(1), unit::bytes,
        "Read body bytes per second sent to one client address (a token bucket of one second); "
        "a read past it waits, so that a host reading without pause leaves the node to writers "
        "and other clients. 0: no quota"));
    table.push_back(config::integer("idle_timeout", o.idle_timeout, 60, 1, 3600, unit::seconds,
                                    "How long a connection may take to send a whole request head "
                                    "(and how long it may idle between requests)"));
    table.push_back(config::text("cluster", o.cluster, "",
                                 "A cluster file (TOML: cluster_id, groups, replicas, one [[node]] "
                                 "per node with id, raft and http addresses; docs/operations.md): "
                                 "the node runs as one of them, with --node-id, and needs an S3 "
                                 "--cold-store. Its --listen defaults to its http address, and "
                                 "--groups comes from the file"));
    table.push_back(config::integer("node_id", o.node_id, 0, 0, 65535, unit::count,
                                    "This node's id in the cluster file (with --cluster)"));
    table.push_back(config::integer("raft_election_ms", o.raft_election_ms, 400, 50, 60'000,
                                    unit::count,
                                    "Milliseconds without a leader's message before a follower "
                                    "of a cluster's group starts an election (randomized up to "
                                    "twice that); failover takes about this long"));
    table.push_back(config::integer("raft_heartbeat_ms", o.raft_heartbeat_ms, 50, 10, 10'000,
                                    unit::count,
                                    "Milliseconds between a cluster leader's heartbeats to each "
                                    "follower; below --raft-election-ms"));
    table.push_back(config::integer("raft_trailing_entries", o.raft_trailing_entries, 1024, 1,
                                    1'000'000, unit::count,
                                    "Log entries a cluster's replica keeps before its newest "
                                    "snapshot for followers a little behind; one further behind "
                                    "gets the snapshot, by way of the cold store"));
    table.push_back(config::integer("body_timeout", o.body_timeout, 30, 1, 3600, unit::seconds,
                                    "How long a request may take to send its whole body"));
    return table;
}

const std::vector<config::preset>& serve_presets() {
    static const std::vector<config::preset> presets{
        {"small", "a laptop, CI or a container with about 512 MiB of memory and 1 core"},
        {"standard", "the defaults: a server with 2 cores and a few GiB of memory"},
        {"large", "a dedicated machine with 8 or more cores and 16 GiB or more of memory"},
    };
    return presets;
}

serve_flags::serve_flags(CLI::App& app) : _app(app) {
    serve_options scratch;
    for (const auto& s : serve_settings(scratch)) {
        const std::string help =
            fmt::format("{} (default {}; {}; env {})", s.help, config::describe(s, s.fallback),
                        config::describe_bounds(s), config::env_name(s));
        if (std::holds_alternative<bool>(s.fallback)) {
            app.add_flag(config::flag_name(s), _switches[s.key], help);
        } else {
            app.add_option(config::flag_name(s), _texts[s.key], help)->type_name(type_name(s));
        }
    }
    std::vector<std::string> names;
    for (const auto& p : serve_presets()) names.push_back(p.name);
    app.add_option(config::flag_name(config::preset_key), _texts[config::preset_key],
                   fmt::format("Values for a machine size: {}; any other source of a setting wins "
                               "(env {})",
                               fmt::join(names, ", "), config::env_name(config::preset_key)))
        ->type_name("NAME");
    app.add_option("--config", _config_file, "TOML file with these settings (env DSTREAM_CONFIG)")
        ->envname("DSTREAM_CONFIG")
        ->type_name("FILE");
}

config::inputs serve_flags::inputs() const {
    config::inputs in;
    for (const auto& [key, text] : _texts) {
        if (_app.count(config::flag_name(key)) > 0) in.flags[key] = text;
    }
    for (const auto& [key, on] : _switches) {
        if (_app.count(config::flag_name(key)) > 0) in.flags[key] = on ? "true" : "false";
    }
    in.config_file = _config_file;
    in.env = from_environment;
    return in;
}

config::effective load_serve_options(serve_options& opts, const config::inputs& in) {
    config::effective e = config::resolve(serve_settings(opts), serve_presets(), in);
    config::store(e);
    opts.config_file = in.config_file;
    if (opts.memory && !opts.cold_store.empty()) {
        throw config::invalid_setting(
            "setting cold_store: an S3 cold store needs a durable node; --memory keeps nothing");
    }
    for (const auto& v : e.values) {
        if (v.about.key == "listen") opts.listen_given = v.from != config::source::fallback;
        if (v.about.key == "admin_listen")
            opts.admin_listen_given = v.from != config::source::fallback;
    }
    if (!opts.admin_token_file.empty()) {
        opts.admin_token = read_admin_token(opts.admin_token_file);
        if (opts.admin_listen == "off") {
            throw config::invalid_setting(
                "setting admin_token_file: the admin listener is off (--admin-listen off)");
        }
    }
    if (opts.tls_cert.empty() != opts.tls_key.empty()) {
        throw config::invalid_setting(
            "setting tls_cert: --tls-cert and --tls-key go together (both, or neither)");
    }
    if (opts.admin_tls_cert.empty() != opts.admin_tls_key.empty()) {
        throw config::invalid_setting(
            "setting admin_tls_cert: --admin-tls-cert and "
            "--admin-tls-key go together (both, or neither)");
    }
    if (!opts.admin_tls_cert.empty() && opts.admin_listen == "off") {
        throw config::invalid_setting(
            "setting admin_tls_cert: the admin listener is off (--admin-listen off)");
    }
    if (!opts.cluster.empty()) {
        if (opts.node_id == 0) {
            throw config::invalid_setting("setting node_id: a cluster's node needs --node-id");
        }
        if (opts.memory) {
            throw config::invalid_setting(
                "setting cluster: a cluster's node is durable, not --memory");
        }
        if (!opts.cold_store.starts_with("s3://")) {
            throw config::invalid_setting(
                "setting cold_store: a cluster needs an S3 cold store (every node reads every "
                "cold object): --cold-store s3://BUCKET[/PREFIX]");
        }
        if (opts.raft_heartbeat_ms >= opts.raft_election_ms) {
            throw config::invalid_setting(
                "setting raft_heartbeat_ms: must be below raft_election_ms");
        }
    } else if (opts.node_id != 0) {
        throw config::invalid_setting("setting node_id: only a cluster's node has one (--cluster)");
    }
    return e;
}

std::optional<listen_address> parse_listen(std::string_view listen) {
    const auto colon = listen.rfind(':');
    if (colon == std::string_view::npos || colon == 0) return std::nullopt;
    std::string_view host = listen.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    const std::string_view digits = listen.substr(colon + 1);
    std::uint16_t port = 0;
    const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), port);
    if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size())
        return std::nullopt;
    return listen_address{std::string(host), port};
}

std::pair<std::string, std::uint16_t> split_listen(const std::string& listen) {
    auto address = parse_listen(listen);
    if (!address) throw std::runtime_error("--listen must be HOST:PORT, got '" + listen + "'");
    return {std::move(address->host), address->port};
}

}  // namespace dstream::cli
