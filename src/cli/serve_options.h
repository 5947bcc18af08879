#pragma once
// The settings of `dstream serve`: flags, and the same keys in a TOML file.
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

namespace dstream::cli {

struct serve_options {
    std::string listen = "127.0.0.1:4437";
    std::string data_dir = "./data";
    std::string config_file;
    bool memory = false;
    unsigned threads = 2;
    std::size_t groups = 16;
    std::string log_level = "info";
    std::uint64_t hot_bytes = 256u << 20;
    std::uint64_t chunk_cache_bytes = 64u << 20;
    std::uint64_t checkpoint_bytes = 64u << 20;
    std::uint64_t wal_segment_bytes = 32u << 20;
    // Slow or idle clients: the whole request head, and the whole body, must
    // arrive within these (a byte now and then does not extend them).
    unsigned idle_timeout_s = 60;
    unsigned body_timeout_s = 30;
};

void add_serve_flags(CLI::App& app, serve_options& opts);

// Fills settings from --config; a flag given on the command line wins. Throws
// std::runtime_error naming the setting on an invalid value.
void apply_config_file(serve_options& opts);

// "HOST:PORT" -> (host, port). Throws on malformed input.
std::pair<std::string, std::uint16_t> split_listen(const std::string& listen);

}  // namespace dstream::cli
