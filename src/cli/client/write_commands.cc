// create, append, close, delete and retention: one request each, answered
// with the status and the protocol's headers.
#include <memory>
#include <optional>

#include "cli/client/client_commands.h"
#include "cli/client/common.h"
#include "cli/client/input.h"
#include "cli/client/report.h"
#include "edge/headers.h"
#include "protocol/content_type.h"

namespace dstream::cli::client {
namespace {

namespace hdr = edge::hdr;

struct create_options {
    common_options common;
    std::string content_type;
    std::optional<std::uint64_t> ttl;
    std::string expires_at;
    bool closed = false;
    std::string file;
    std::string forked_from;
    std::string fork_offset;
};

int run_create(const create_options& o) {
    request r{.method = "PUT", .url = o.common.url};
    if (!o.content_type.empty()) r.headers.push_back(header_line("Content-Type", o.content_type));
    if (o.ttl) r.headers.push_back(header_line(hdr::stream_ttl, std::to_string(*o.ttl)));
    if (!o.expires_at.empty())
        r.headers.push_back(header_line(hdr::stream_expires_at, o.expires_at));
    if (o.closed) r.headers.push_back(header_line(hdr::stream_closed, "true"));
    if (!o.forked_from.empty())
        r.headers.push_back(header_line(hdr::stream_forked_from, o.forked_from));
    if (!o.fork_offset.empty())
        r.headers.push_back(header_line(hdr::stream_fork_offset, o.fork_offset));
    session s(o.common.headers, o.common.cacert);
    if (o.file.empty()) return report(s.perform(r), o.common.json);
    const input body = input::open(o.file);
    return report(send_body(s, std::move(r), body.bytes()), o.common.json);
}

struct append_options {
    common_options common;
    std::string file;
    std::string content_type;
    producer_options producer;
    std::string stream_seq;
    bool close = false;
};

int run_append(const append_options& o) {
    session s(o.common.headers, o.common.cacert);
    std::string content_type = o.content_type;
    if (content_type.empty()) {
        // An append names the stream's content type (base protocol 5.2): ask for it.
        const response head = s.perform({.method = "HEAD", .url = o.common.url});
        if (!head.ok()) return report_failure(head, o.common.json);
        content_type =
            head.header("Content-Type").value_or(std::string(protocol::default_content_type));
    }
    const input body = input::open(o.file);
    request r{.method = "POST", .url = o.common.url};
    r.headers.push_back(header_line("Content-Type", content_type));
    add_producer_headers(o.producer, r.headers);
    if (!o.stream_seq.empty()) r.headers.push_back(header_line(hdr::stream_seq, o.stream_seq));
    if (o.close) r.headers.push_back(header_line(hdr::stream_closed, "true"));
    return report(send_body(s, std::move(r), body.bytes()), o.common.json);
}

struct close_options {
    common_options common;
    producer_options producer;
};

int run_close(const close_options& o) {
    request r{.method = "POST", .url = o.common.url};
    r.headers.push_back(header_line(hdr::stream_closed, "true"));
    add_producer_headers(o.producer, r.headers);
    session s(o.common.headers, o.common.cacert);
    return report(s.perform(r), o.common.json);
}

int run_delete(const url_options& o) {
    session s(o.common.headers, o.common.cacert);
    return report(s.perform({.method = "DELETE", .url = o.common.url}), o.common.json);
}

struct retention_options {
    common_options common;
    std::string offset;
};

int run_retention(const retention_options& o) {
    session s(o.common.headers, o.common.cacert);
    return report(s.perform({.method = "PUT", .url = o.common.url + "/retention/" + o.offset}),
                  o.common.json);
}

}  // namespace

void add_write_commands(CLI::App& app, std::vector<command>& out) {
    {
        auto [cmd, o] = add_client_command(
            app, out,
            {"create", "Create a stream (PUT; base protocol 5.1), optionally with a first body",
             "dstream create http://127.0.0.1:4437/v1/stream/greeting --content-type text/plain"},
            run_create);
        cmd->add_option(
            "--content-type", o->content_type,
            "The stream's content type (the server's default: application/octet-stream)");
        auto* ttl = cmd->add_option("--ttl", o->ttl,
                                    "Stream-TTL: seconds the stream lives after its last use");
        cmd->add_option("--expires-at", o->expires_at, "Stream-Expires-At: an RFC 3339 time")
            ->excludes(ttl);
        cmd->add_flag("--closed", o->closed, "Create the stream closed (Stream-Closed: true)");
        cmd->add_option("--file", o->file, "A first body from this file ('-': standard input)");
        cmd->add_option("--forked-from", o->forked_from,
                        "Create a fork of this stream (a path or URL; base protocol 4.2)");
        cmd->add_option("--fork-offset", o->fork_offset,
                        "Where the fork starts (default: the source's tail)")
            ->needs("--forked-from");
    }
    {
        auto [cmd, o] = add_client_command(
            app, out,
            {"append",
             "Append a body from standard input or a file (POST; base protocol 5.2); without "
             "--content-type, the stream's own type is asked for with a HEAD",
             "echo '{\"n\":1}' | dstream append http://127.0.0.1:4437/my-app/events"},
            run_append);
        cmd->add_option("--file", o->file,
                        "Read the body from this file instead of standard input");
        cmd->add_option("--content-type", o->content_type, "The body's content type");
        add_producer_options(*cmd, o->producer);
        cmd->add_option("--stream-seq", o->stream_seq,
                        "Stream-Seq: a writer's sequence token (base protocol 5.2)");
        cmd->add_flag("--close", o->close,
                      "Close the stream with this append (Stream-Closed: true)");
    }
    {
        auto [cmd, o] = add_client_command(
            app, out,
            {"close",
             "Close a stream: no more appends (POST with Stream-Closed; base protocol 5.3)",
             "dstream close http://127.0.0.1:4437/v1/stream/greeting"},
            run_close);
        add_producer_options(*cmd, o->producer);
    }
    add_client_command(app, out,
                       {"delete", "Delete a stream (base protocol 5.4)",
                        "dstream delete http://127.0.0.1:4437/v1/stream/greeting"},
                       run_delete);
    {
        auto [cmd, o] = add_client_command(
            app, out,
            {"retention",
             "Drop the bytes below OFFSET (PUT {stream}/retention/{offset}; extensions 2.2): reads "
             "below it answer 410 and readers start from the snapshot (dstream bootstrap)",
             "dstream retention http://127.0.0.1:4437/my-app/doc 00000000000000001024"},
            run_retention);
        cmd->add_option("OFFSET", o->offset,
                        "The new earliest retained offset; at most the latest snapshot's")
            ->required();
    }
}

}  // namespace dstream::cli::client
