// What every scenario shares: the common command-line options, stream
// naming on both URL surfaces, and creating the streams before a run.
//
// Adding a scenario: write scenario_<name>.cc with an add_<name>_scenario()
// that registers a CLI11 subcommand (use add_common_options, and
// add_window_options for a timed run), declare it below, call it from main.cc
// and list the file in CMakeLists.txt.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "http_client.h"
#include "report.h"
#include "runner.h"

namespace dstream::bench {

enum class surface { bucket, v1 };

struct common_options {
    std::string url;
    unsigned threads = 1;
    double warmup_s = 2;
    double duration_s = 10;
    int server_pid = 0;
    std::string surface_name = "bucket";
    std::string content_type = "application/octet-stream";

    surface where() const { return surface_name == "v1" ? surface::v1 : surface::bucket; }
    window_options window() const;
};

// --url, --threads, --server-pid, --surface, --content-type.
void add_common_options(CLI::App& sub, common_options& o);
// --warmup and --duration, for scenarios that measure a time window.
void add_window_options(CLI::App& sub, common_options& o);

// Parses o.url; on failure prints why and returns false.
bool resolve_target(const common_options& o, target& t);

// Eight random [a-z0-9] characters, so runs against one server do not collide.
std::string random_run_id();

// bucket: BASE/bench-RUN/s<i>; v1: BASE/v1/stream/bench-RUN-s<i>.
std::string stream_path(const target& t, surface s, const std::string& run_id, std::size_t index);

bool is_json_type(std::string_view content_type);

// A body of `bytes` bytes that is valid for the content type (a JSON string
// for application/json, printable filler otherwise).
std::string make_body(std::size_t bytes, const std::string& content_type);

// The streams of one run.
struct run_streams {
    target where;
    std::string run_id;
    std::vector<std::string> paths;
    double setup_s = 0;  // creating them
};

// Resolves --url, names `count` streams for a fresh run id and creates them
// over up to `connections` connections. Returns 0, or (having said why on
// stderr) the exit code.
int create_run_streams(const common_options& o, worker_pool& pool, std::size_t count,
                       unsigned connections, run_streams& out);

// The JSON fields every scenario reports about its run: url, surface,
// threads, content_type, run_id.
void add_run_fields(json_object& j, const common_options& o, const run_streams& rs);

// PUTs every path (Content-Type: content_type) over `connections` keep-alive
// connections spread on the pool, path i by connection i % connections.
// True when every answer was 2xx; otherwise error describes the first failures.
bool create_streams(worker_pool& pool, const target& t, const std::vector<std::string>& paths,
                    unsigned connections, const std::string& content_type, std::string& error);

// Scenarios.
void add_append_scenario(CLI::App& app, int& exit_code);
void add_fanout_scenario(CLI::App& app, int& exit_code);
void add_catchup_scenario(CLI::App& app, int& exit_code);
void add_longpoll_scenario(CLI::App& app, int& exit_code);
void add_bootstrap_scenario(CLI::App& app, int& exit_code);

}  // namespace dstream::bench
