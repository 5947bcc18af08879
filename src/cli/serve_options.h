#pragma once
// The settings of `dstream serve`. serve_settings() is their one table: it
// drives the flags, the TOML keys, the DSTREAM_* environment variables, the
// checks at start, `dstream config print` and `dstream config docs`.
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "config/resolve.h"
#include "config/setting.h"

namespace dstream::cli {

// The values come from serve_settings(); see docs/configuration.md.
struct serve_options {
    std::string listen;
    // The admin listener (HOST:PORT, or "off") and the file of its bearer
    // token (empty: none).
    std::string admin_listen;
    std::string admin_token_file;
    // TLS on each listener: PEM certificate (chain) and key files; both empty:
    // plain HTTP. Reloaded on SIGHUP.
    std::string tls_cert;
    std::string tls_key;
    std::string admin_tls_cert;
    std::string admin_tls_key;
    std::string data_dir;
    std::string config_file;  // the TOML file they were read from, if any
    bool memory = false;
    unsigned threads = 0;
    std::size_t groups = 0;
    std::string log_level;
    std::uint64_t hot_bytes = 0;
    std::uint64_t chunk_cache_bytes = 0;
    std::uint64_t checkpoint_bytes = 0;
    std::uint64_t wal_segment_bytes = 0;
    unsigned wal_sync_threads = 0;
    bool wal_preallocate = false;
    bool access_log = false;
    std::uint64_t shutdown_timeout_seconds = 0;
    std::uint64_t staged_part_grace_seconds = 0;
    std::uint64_t cold_orphan_grace_seconds = 0;
    // Empty: the directory objects/ under data_dir; else s3://BUCKET[/PREFIX].
    std::string cold_store;
    std::string s3_endpoint;
    std::string s3_region;
    std::uint64_t s3_connect_timeout_ms = 0;
    std::uint64_t s3_request_timeout_ms = 0;
    std::uint64_t ingress_body_bytes = 0;
    std::uint64_t max_live_reads = 0;
    std::uint64_t max_live_reads_per_stream = 0;
    // Slow or idle clients: the whole request head, and the whole body, must
    // arrive within these (a byte now and then does not extend them).
    std::uint64_t idle_timeout = 0;
    std::uint64_t body_timeout = 0;
    std::uint64_t client_read_bytes_per_second = 0;
    // A cluster's node (docs/operations.md): the cluster file, this node's id
    // in it, and the Raft timing of its groups.
    std::string cluster;
    std::uint64_t node_id = 0;
    std::uint64_t raft_election_ms = 0;
    std::uint64_t raft_heartbeat_ms = 0;
    std::uint64_t raft_trailing_entries = 0;
    bool listen_given = false;        // --listen (or its env or file key) was set
    bool admin_listen_given = false;  // --admin-listen (or its env or file key) was set
    std::string admin_token;          // read from admin_token_file at start
};

// The table, each row bound to its field of `opts`.
std::vector<config::setting> serve_settings(serve_options& opts);
const std::vector<config::preset>& serve_presets();

// The flags of every setting plus --config and --preset, on a command that
// takes them (`serve`, `config print`).
class serve_flags {
public:
    explicit serve_flags(CLI::App& app);
    serve_flags(const serve_flags&) = delete;
    serve_flags& operator=(const serve_flags&) = delete;

    // After parsing: what the command line and the environment say.
    config::inputs inputs() const;

private:
    CLI::App& _app;
    std::map<std::string, std::string> _texts;  // key -> the flag's text, bound by CLI11
    std::map<std::string, bool> _switches;      // key -> a boolean flag's value
    std::string _config_file;
};

// Resolves every setting and stores it in `opts`. Throws config::invalid_setting.
config::effective load_serve_options(serve_options& opts, const config::inputs& in);

struct listen_address {
    std::string host;
    std::uint16_t port = 0;
};

// "HOST:PORT" (or "[V6]:PORT"), or nothing when malformed.
std::optional<listen_address> parse_listen(std::string_view listen);

// "HOST:PORT" -> (host, port); load_serve_options() has checked the form.
std::pair<std::string, std::uint16_t> split_listen(const std::string& listen);

}  // namespace dstream::cli
