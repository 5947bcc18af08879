#include "cli/client/common.h"

#include <cstdio>
#include <optional>

#include "cli/client/progress.h"
#include "edge/headers.h"
#include "protocol/content_type.h"
#include "protocol/json_text.h"

namespace dstream::cli::client {

void add_common_options(CLI::App& cmd, common_options& o) {
    cmd.add_option("URL", o.url, "The stream's URL, e.g. http://127.0.0.1:4437/v1/stream/greeting")
        ->required()
        ->check([](const std::string& url) -> std::string {
            if (url.starts_with("http://") || url.starts_with("https://")) return "";
            return "the URL must start with http:// or https://";
        });
    cmd.add_option(
        "-H,--header", o.headers,
        "An extra request header, 'Name: value' (repeatable), e.g. 'Authorization: Bearer T'");
    add_cacert_option(cmd, o.cacert);
    cmd.add_flag("--json", o.json,
                 "Print the outcome as JSON on stdout: one object per answer, with its status and "
                 "headers, and the error body of a refusal");
}

void add_cacert_option(CLI::App& cmd, std::string& file) {
    cmd.add_option("--cacert", file,
                   "A PEM file of the certificate authorities an https:// server's certificate "
                   "is checked against, instead of the system's (e.g. a node's self-signed one)")
        ->envname("DSTREAM_CACERT")
        ->check(CLI::ExistingFile);
}

CLI::App* new_client_command(CLI::App& parent, const command_text& text) {
    CLI::App* cmd = parent.add_subcommand(text.name, text.help)->group("Client");
    cmd->footer("Example: " + text.example +
                "\nExit codes: 0 done; 1 the server refused (its error code and message are "
                "printed); 2 bad arguments; 3 no answer.");
    return cmd;
}

std::string with_query(const std::string& url, const std::string& query) {
    return url + (url.find('?') == std::string::npos ? "?" : "&") + query;
}

void add_producer_options(CLI::App& cmd, producer_options& p) {
    auto* id = cmd.add_option("--producer", p.id, "Producer-Id of an idempotent producer");
    auto* epoch = cmd.add_option("--epoch", p.epoch, "Producer-Epoch (with --producer)");
    auto* seq = cmd.add_option("--seq", p.seq, "Producer-Seq (with --producer)");
    id->needs(epoch)->needs(seq);
    epoch->needs(id);
    seq->needs(id);
}

void add_producer_headers(const producer_options& p, std::vector<std::string>& headers) {
    if (p.id.empty()) return;
    headers.push_back(std::string(edge::hdr::producer_id) + ": " + p.id);
    headers.push_back(std::string(edge::hdr::producer_epoch) + ": " + std::to_string(p.epoch));
    headers.push_back(std::string(edge::hdr::producer_seq) + ": " + std::to_string(p.seq));
}

std::string header_line(std::string_view name, std::string_view value) {
    return std::string(name) + ": " + std::string(value);
}

response send_body(session& s, request r, std::string_view body) {
    constexpr std::size_t worth_a_meter = 1 << 20;
    progress meter("sent", body.size());
    r.body = body;
    if (body.size() >= worth_a_meter) {
        r.on_progress = [&meter](std::uint64_t sent, std::uint64_t) { meter.update(sent); };
    }
    return s.perform(r);
}

void write_data(std::string_view content_type, std::string_view bytes) {
    std::optional<protocol::json_messages> messages;
    if (protocol::is_json_media_type(content_type) && bytes.starts_with('[')) {
        auto flattened = protocol::normalize_json_body(bytes, protocol::empty_array_rule::allow);
        if (flattened) {
            messages = std::move(flattened).value();
            bytes = messages->stored;
        }
    }
    std::fwrite(bytes.data(), 1, bytes.size(), stdout);
    std::fflush(stdout);
}

}  // namespace dstream::cli::client
