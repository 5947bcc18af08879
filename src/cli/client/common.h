#pragma once
// What every client command takes (the stream URL, extra headers, --json)
// and the pieces several of them share.
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <CLI/CLI.hpp>

#include "cli/client/http.h"
#include "cli/command.h"

namespace dstream::cli::client {

struct common_options {
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
    std::string cacert;                // a PEM file of CAs for https (empty: the system's)
    bool json = false;
};

// URL (positional, http:// or https://), -H/--header, --cacert and --json.
void add_common_options(CLI::App& cmd, common_options& o);

// --cacert FILE (env DSTREAM_CACERT): the CAs an https server is checked against.
void add_cacert_option(CLI::App& cmd, std::string& file);

// The options of a command that takes only those.
struct url_options {
    common_options common;
};

// What `--help` says of a client command.
struct command_text {
    std::string name;
    std::string help;
    std::string example;
};

// A subcommand of `parent` under the "Client" heading, its example and the
// exit codes in its help.
CLI::App* new_client_command(CLI::App& parent, const command_text& text);

// Registers a client command with its options (URL, -H and --json bound to
// their `common`), run by `run` once parsed. Returns both, for the command's
// own flags.
template <typename Options>
std::pair<CLI::App*, std::shared_ptr<Options>> add_client_command(CLI::App& parent,
                                                                  std::vector<command>& out,
                                                                  const command_text& text,
                                                                  int (*run)(const Options&)) {
    auto options = std::make_shared<Options>();
    CLI::App* cmd = new_client_command(parent, text);
    add_common_options(*cmd, options->common);
    out.push_back({cmd, [options, run] { return run(*options); }});
    return {cmd, options};
}

// `url` with `query` appended after "?" or "&".
std::string with_query(const std::string& url, const std::string& query);

// Idempotent producer headers (base protocol 5.2.1): all three or none.
struct producer_options {
    std::string id;
    std::uint64_t epoch = 0;
    std::uint64_t seq = 0;
};
void add_producer_options(CLI::App& cmd, producer_options& p);
void add_producer_headers(const producer_options& p, std::vector<std::string>& headers);

// "Name: value".
std::string header_line(std::string_view name, std::string_view value);

// Sends `r` with `body`, with a progress meter when the body is large.
response send_body(session& s, request r, std::string_view body);

// Writes stream data to stdout as it arrives. A JSON array (how the
// /v1/stream surface reads a JSON stream) becomes one message per line, so
// output of either surface is NDJSON.
void write_data(std::string_view content_type, std::string_view bytes);

}  // namespace dstream::cli::client
