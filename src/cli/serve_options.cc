#include "cli/serve_options.h"

#include <stdexcept>

#include <toml++/toml.h>

namespace dstream::cli {
namespace {

// Flags the user set explicitly: they take precedence over the config file.
CLI::App* serve_app = nullptr;

bool flag_given(const char* name) { return serve_app != nullptr && serve_app->count(name) > 0; }

}  // namespace

void add_serve_flags(CLI::App& app, serve_options& opts) {
    serve_app = &app;
    app.add_option("--listen", opts.listen, "Address to listen on, HOST:PORT")
        ->capture_default_str();
    app.add_option("--data-dir", opts.data_dir, "Directory for the node's data")
        ->capture_default_str();
    app.add_option("--config", opts.config_file, "TOML file with these settings")
        ->check(CLI::ExistingFile);
    app.add_flag("--memory", opts.memory, "Keep everything in memory: nothing survives exit");
    app.add_option("--threads", opts.threads, "I/O threads")
        ->check(CLI::Range(1u, 256u))
        ->capture_default_str();
    app.add_option("--groups", opts.groups, "Stream groups (streams hash to groups)")
        ->check(CLI::Range(std::size_t{1}, std::size_t{4096}))
        ->capture_default_str();
    app.add_option("--hot-bytes", opts.hot_bytes,
                   "Stream bytes kept in memory across all streams before older bytes move to "
                   "chunk files (durable mode)")
        ->check(CLI::Range(std::uint64_t{1} << 20, std::uint64_t{1} << 40))
        ->capture_default_str();
    app.add_option("--chunk-cache-bytes", opts.chunk_cache_bytes, "Memory for recently read chunks")
        ->check(CLI::Range(std::uint64_t{0}, std::uint64_t{1} << 40))
        ->capture_default_str();
    app.add_option("--checkpoint-bytes", opts.checkpoint_bytes,
                   "Log bytes a group writes between checkpoints (bounds replay at restart)")
        ->check(CLI::Range(std::uint64_t{1} << 16, std::uint64_t{1} << 40))
        ->capture_default_str();
    app.add_option("--wal-segment-bytes", opts.wal_segment_bytes,
                   "Size at which the write-ahead log starts a new segment file")
        ->check(CLI::Range(std::uint64_t{1} << 16, std::uint64_t{1} << 32))
        ->capture_default_str();
    app.add_option("--idle-timeout", opts.idle_timeout_s,
                   "Seconds a connection may take to send a whole request head, waiting "
                   "included; then it is closed")
        ->check(CLI::Range(1u, 3600u))
        ->capture_default_str();
    app.add_option("--body-timeout", opts.body_timeout_s,
                   "Seconds a request body may take to arrive whole; then the connection is closed")
        ->check(CLI::Range(1u, 3600u))
        ->capture_default_str();
    app.add_option("--log-level", opts.log_level, "trace, debug, info, warn, error")
        ->check(CLI::IsMember({"trace", "debug", "info", "warn", "error"}))
        ->capture_default_str();
}

void apply_config_file(serve_options& opts) {
    if (opts.config_file.empty()) return;
    toml::table table;
    try {
        table = toml::parse_file(opts.config_file);
    } catch (const toml::parse_error& e) {
        throw std::runtime_error("config " + opts.config_file + ": " +
                                 std::string(e.description()));
    }
    const auto read_string = [&](const char* key, const char* flag, std::string& out) {
        if (auto v = table[key]; v && !flag_given(flag)) {
            auto s = v.value<std::string>();
            if (!s)
                throw std::runtime_error(std::string("config setting '") + key +
                                         "' must be a string");
            out = *s;
        }
    };
    const auto read_number = [&](const char* key, const char* flag, auto& out, std::int64_t lo,
                                 std::int64_t hi) {
        if (auto v = table[key]; v && !flag_given(flag)) {
            auto n = v.value<std::int64_t>();
            if (!n || *n < lo || *n > hi) {
                throw std::runtime_error(std::string("config setting '") + key +
                                         "' must be an integer from " + std::to_string(lo) +
                                         " to " + std::to_string(hi));
            }
            out = static_cast<std::remove_reference_t<decltype(out)>>(*n);
        }
    };
    read_string("listen", "--listen", opts.listen);
    read_string("data_dir", "--data-dir", opts.data_dir);
    read_string("log_level", "--log-level", opts.log_level);
    read_number("threads", "--threads", opts.threads, 1, 256);
    read_number("groups", "--groups", opts.groups, 1, 4096);
    read_number("hot_bytes", "--hot-bytes", opts.hot_bytes, std::int64_t{1} << 20,
                std::int64_t{1} << 40);
    read_number("checkpoint_bytes", "--checkpoint-bytes", opts.checkpoint_bytes,
                std::int64_t{1} << 16, std::int64_t{1} << 40);
    read_number("wal_segment_bytes", "--wal-segment-bytes", opts.wal_segment_bytes,
                std::int64_t{1} << 16, std::int64_t{1} << 32);
    read_number("idle_timeout", "--idle-timeout", opts.idle_timeout_s, 1, 3600);
    read_number("body_timeout", "--body-timeout", opts.body_timeout_s, 1, 3600);
    read_number("chunk_cache_bytes", "--chunk-cache-bytes", opts.chunk_cache_bytes, 0,
                std::int64_t{1} << 40);
    if (auto v = table["memory"]; v && !flag_given("--memory")) {
        auto b = v.value<bool>();
        if (!b) throw std::runtime_error("config setting 'memory' must be true or false");
        opts.memory = *b;
    }
}

std::pair<std::string, std::uint16_t> split_listen(const std::string& listen) {
    const auto colon = listen.rfind(':');
    if (colon == std::string::npos || colon == 0) {
        throw std::runtime_error("--listen must be HOST:PORT, got '" + listen + "'");
    }
    std::string host = listen.substr(0, colon);
    if (host.size() > 2 && host.front() == '[' && host.back() == ']')
        host = host.substr(1, host.size() - 2);
    unsigned long port = 0;
    try {
        std::size_t used = 0;
        port = std::stoul(listen.substr(colon + 1), &used);
        if (used != listen.size() - colon - 1) throw std::invalid_argument("junk");
    } catch (const std::exception&) {
        throw std::runtime_error("--listen port must be a number, got '" + listen + "'");
    }
    if (port > 65535) throw std::runtime_error("--listen port must be at most 65535");
    return {host, static_cast<std::uint16_t>(port)};
}

}  // namespace dstream::cli
