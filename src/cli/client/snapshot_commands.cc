// snapshot publish (whole, or in parts when large), snapshot read and
// bootstrap (extensions 2.2, 2.5, 3).
#include <cstdio>
#include <memory>

#include <fmt/format.h>

#include "cli/client/client_commands.h"
#include "cli/client/common.h"
#include "cli/client/input.h"
#include "cli/client/multipart.h"
#include "cli/client/progress.h"
#include "cli/client/report.h"
#include "config/setting.h"
#include "edge/headers.h"
#include "protocol/content_type.h"
#include "protocol/digest.h"

namespace dstream::cli::client {
namespace {

namespace hdr = edge::hdr;

// One request's worth: the server's Ursula-Max-Request-Bytes.
constexpr std::uint64_t default_part_bytes = config::mib(32);

struct publish_options {
    common_options common;
    std::string offset;
    std::string file;
    std::string content_type{protocol::default_content_type};
    std::uint64_t part_bytes = default_part_bytes;
};

std::string snapshot_url(const publish_options& o) {
    return o.common.url + "/snapshot/" + o.offset;
}

// Best effort after a failed upload, so that no staged part waits for the
// server's sweep.
void discard_parts(session& s, const publish_options& o, std::size_t staged) {
    const response res = s.perform({.method = "DELETE", .url = o.common.url + "/snapshot/parts"});
    fmt::print(stderr, "dstream: {} staged part{} {}\n", staged, staged == 1 ? "" : "s",
               res.ok() ? "discarded" : "left for the server to sweep");
}

// Stages each piece (POST .../parts), then commits them in order with the
// digest of the whole (PUT with Stream-Snapshot-Parts and -Digest).
int publish_in_parts(session& s, const publish_options& o, std::string_view body) {
    std::vector<std::string> ids;
    progress meter("sent", body.size());
    for (std::size_t at = 0; at < body.size(); at += o.part_bytes) {
        request part{.method = "POST", .url = snapshot_url(o) + "/parts"};
        part.headers.push_back(header_line("Content-Type", protocol::default_content_type));
        part.body = body.substr(at, o.part_bytes);
        part.on_progress = [&meter, at](std::uint64_t sent, std::uint64_t) {
            meter.update(at + sent);
        };
        response res = s.perform(part);
        const auto id = res.header(hdr::stream_snapshot_part);
        if (!res.ok() || !id) {
            if (res.ok()) res.failure = "the answer to a part has no Stream-Snapshot-Part";
            if (!ids.empty()) discard_parts(s, o, ids.size());
            return report_failure(res, o.common.json);
        }
        ids.push_back(*id);
    }
    std::string list;
    for (const auto& id : ids) list += id + "\n";
    request commit{.method = "PUT", .url = snapshot_url(o)};
    commit.headers.push_back(header_line("Content-Type", o.content_type));
    commit.headers.push_back(header_line(hdr::stream_snapshot_parts, std::to_string(ids.size())));
    commit.headers.push_back(
        header_line(hdr::stream_snapshot_digest,
                    protocol::to_hex(protocol::snapshot_digest(o.content_type, body))));
    commit.body = list;
    const response res = s.perform(commit);
    if (!res.ok()) discard_parts(s, o, ids.size());
    return report(res, o.common.json);
}

int run_publish(const publish_options& o) {
    const input body = input::open(o.file);
    session s(o.common.headers, o.common.cacert);
    if (body.bytes().size() > o.part_bytes) return publish_in_parts(s, o, body.bytes());
    request r{.method = "PUT", .url = snapshot_url(o)};
    r.headers.push_back(header_line("Content-Type", o.content_type));
    return report(send_body(s, std::move(r), body.bytes()), o.common.json);
}

struct snapshot_read_options {
    common_options common;
    std::string offset;
    std::string output;
    std::string range;
};

int run_snapshot_read(const snapshot_read_options& o) {
    std::FILE* to = stdout;
    if (!o.output.empty()) {
        to = std::fopen(o.output.c_str(), "wb");
        if (to == nullptr) throw std::runtime_error("cannot write " + o.output);
    }
    const std::unique_ptr<std::FILE, int (*)(std::FILE*)> closer(to == stdout ? nullptr : to,
                                                                 std::fclose);
    // Under --json without a file the body goes into the JSON object instead.
    const bool collect = o.common.json && o.output.empty();
    progress meter("read", 0);
    request r{.url = o.common.url + "/snapshot/" + o.offset};
    if (!o.range.empty()) r.headers.push_back(header_line("Range", "bytes=" + o.range));
    if (!collect) {
        r.sink = [to](const response&, std::string_view bytes) {
            return std::fwrite(bytes.data(), 1, bytes.size(), to) == bytes.size();
        };
    }
    r.on_progress = [&meter](std::uint64_t, std::uint64_t received) { meter.update(received); };
    session s(o.common.headers, o.common.cacert);
    const response res = s.perform(r);
    if (!res.ok()) return report_failure(res, o.common.json);
    if (o.common.json) {
        nlohmann::json j = answer_json(res);
        if (collect) add_data(j, res.header("Content-Type").value_or(""), res.body);
        print_json(j);
    }
    return std::fflush(to) == 0 ? exit_ok : exit_failure;
}

int run_bootstrap(const url_options& options) {
    const common_options& o = options.common;
    session s(o.headers, o.cacert);
    progress meter("read", 0);
    request r{.url = o.url + "/bootstrap"};
    r.on_progress = [&meter](std::uint64_t, std::uint64_t received) { meter.update(received); };
    const response res = s.perform(r);
    if (!res.ok()) return report_failure(res, o.json);
    const auto parts = split_multipart(res.header("Content-Type").value_or(""), res.body);
    if (!parts) {
        response broken = res;
        broken.failure = "the answer is not multipart/mixed";
        return report_failure(broken, o.json);
    }
    if (o.json) {
        nlohmann::json j = answer_json(res);
        j["parts"] = nlohmann::json::array();
        for (const auto& p : *parts) {
            nlohmann::json part{{"content_type", p.content_type}};
            add_data(part, p.content_type, p.body);
            j["parts"].push_back(std::move(part));
        }
        print_json(j);
        return exit_ok;
    }
    for (const auto& p : *parts) {
        write_data(p.content_type, p.body);
        // A JSON part is one message: one per line, like `dstream read`.
        if (protocol::is_json_media_type(p.content_type) && !p.body.empty() &&
            !p.body.ends_with('\n')) {
            write_data("", "\n");
        }
    }
    return exit_ok;
}

}  // namespace

void add_snapshot_commands(CLI::App& app, std::vector<command>& out) {
    CLI::App* snapshot =
        app.add_subcommand("snapshot", "Publish or read a stream's snapshot (extensions 2)")
            ->group("Client")
            ->require_subcommand(1);
    {
        auto [cmd, o] = add_client_command(
            *snapshot, out,
            {"publish",
             "Publish a snapshot of the stream's bytes below OFFSET (PUT {stream}/snapshot/"
             "{offset}; extensions 2.2). A body larger than --part-bytes is uploaded in parts "
             "and committed with its BLAKE3 digest",
             "dstream snapshot publish http://127.0.0.1:4437/my-app/doc 00000000000000001024 "
             "--file state.bin"},
            run_publish);
        cmd->add_option("OFFSET", o->offset,
                        "The snapshot's offset: a message boundary at or below the tail")
            ->required();
        cmd->add_option("--file", o->file,
                        "Read the snapshot from this file instead of standard input");
        cmd->add_option("--content-type", o->content_type, "The snapshot's content type")
            ->capture_default_str();
        cmd->add_option("--part-bytes", o->part_bytes,
                        "Largest body of one request; a larger snapshot goes in parts of this size")
            ->check(CLI::Range(std::uint64_t{1}, default_part_bytes))
            ->capture_default_str();
    }
    {
        auto [cmd, o] = add_client_command(
            *snapshot, out,
            {"read",
             "Print the snapshot published at OFFSET (GET {stream}/snapshot/{offset}; "
             "extensions 2.5)",
             "dstream snapshot read http://127.0.0.1:4437/my-app/doc 00000000000000001024 "
             "--output state.bin"},
            run_snapshot_read);
        cmd->add_option("OFFSET", o->offset,
                        "The snapshot's offset (HEAD's Stream-Snapshot-Offset)")
            ->required();
        cmd->add_option("--output", o->output,
                        "Write the snapshot to this file instead of standard output");
        cmd->add_option("--range", o->range,
                        "Only these bytes: FIRST-LAST, FIRST- or -SUFFIX_LENGTH");
    }
    add_client_command(
        app, out,
        {"bootstrap",
         "Print a stream's latest snapshot and the messages after it, one part after the other "
         "(GET {stream}/bootstrap; extensions 3); then read on from its Stream-Next-Offset",
         "dstream bootstrap http://127.0.0.1:4437/my-app/doc --json"},
        run_bootstrap);
}

}  // namespace dstream::cli::client
