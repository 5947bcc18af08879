#include "cli/client/report.h"

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <initializer_list>
#include <optional>
#include <strings.h>

#include <fmt/format.h>

#include "cli/command.h"
#include "protocol/content_type.h"
#include "protocol/sse.h"

namespace dstream::cli::client {
namespace {

bool starts_with_name(std::string_view name, std::string_view prefix) {
    return name.size() >= prefix.size() &&
           ::strncasecmp(name.data(), prefix.data(), prefix.size()) == 0;
}

bool named_in(std::string_view name, std::initializer_list<std::string_view> prefixes) {
    for (const std::string_view prefix : prefixes) {
        if (starts_with_name(name, prefix)) return true;
    }
    return false;
}

// The protocol's headers and the HTTP ones a machine may act on; not the
// browser-facing CORS and security headers every answer carries.
bool for_machines(std::string_view name) {
    return named_in(name, {"stream-", "producer-", "ursula-", "location", "etag", "content-type",
                           "content-range", "content-length", "cache-control", "retry-after"});
}

// What a person wants to see: what the operation did to the stream. The
// content type of an error answer is its body's, not the stream's.
bool for_people(std::string_view name, bool failed) {
    if (failed && starts_with_name(name, "content-type")) return false;
    return named_in(name,
                    {"stream-", "producer-", "location", "etag", "content-type", "retry-after"});
}

std::string lower(std::string_view s) {
    std::string out(s);
    std::transform(out.begin(), out.end(), out.begin(),
                   [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return out;
}

void print_headers(std::FILE* to, const response& r, bool failed) {
    for (const auto& [name, value] : r.headers) {
        if (for_people(name, failed)) fmt::print(to, "{}: {}\n", name, value);
    }
}

// {"code", "message"} of an error body, when it has that shape.
nlohmann::json error_of(const response& r) {
    const auto body = nlohmann::json::parse(r.body, nullptr, /*allow_exceptions=*/false);
    if (!body.is_object() || !body.contains("error") || !body["error"].is_object()) return nullptr;
    return body["error"];
}

// A string member; a body is only a hint (extensions 11: a client must not
// require it), so any other shape is ignored.
std::optional<std::string> text_member(const nlohmann::json& object, const char* name) {
    const auto it = object.find(name);
    if (it == object.end() || !it->is_string()) return std::nullopt;
    return it->get<std::string>();
}

}  // namespace

nlohmann::json answer_json(const response& r) {
    nlohmann::json headers = nlohmann::json::object();
    for (const auto& [name, value] : r.headers) {
        if (for_machines(name)) headers[lower(name)] = value;
    }
    return {{"status", r.status}, {"headers", std::move(headers)}};
}

void add_data(nlohmann::json& out, std::string_view content_type, std::string_view bytes) {
    if (protocol::is_text_for_sse(content_type) ||
        protocol::media_type_essence(content_type) == "application/x-ndjson") {
        out["data"] = std::string(bytes);
        return;
    }
    std::string encoded;
    protocol::append_base64(encoded, bytes);
    out["data_base64"] = std::move(encoded);
}

void print_json(const nlohmann::json& j) {
    fmt::print("{}\n", j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace));
}

int report_failure(const response& r, bool json) {
    if (!r.answered()) {
        if (json) {
            print_json({{"status", r.status}, {"failure", r.failure}});
        } else {
            fmt::print(stderr, "dstream: no answer: {}\n", r.failure);
        }
        return exit_no_answer;
    }
    const nlohmann::json error = error_of(r);
    if (json) {
        nlohmann::json out = answer_json(r);
        if (!error.is_null()) out["error"] = error;
        print_json(out);
        return exit_failure;
    }
    std::string line = fmt::format("dstream: {} {}", r.status, r.reason);
    if (!error.is_null()) {
        const auto code = text_member(error, "code").value_or("(no code)");
        const auto message = text_member(error, "message").value_or("");
        line += fmt::format(": {}{}{}", code, message.empty() ? "" : ": ", message);
    }
    fmt::print(stderr, "{}\n", line);
    print_headers(stderr, r, true);
    return exit_failure;
}

int report(const response& r, bool json) {
    if (!r.ok()) return report_failure(r, json);
    if (json) {
        print_json(answer_json(r));
    } else {
        fmt::print("{} {}\n", r.status, r.reason);
        print_headers(stdout, r, false);
    }
    return exit_ok;
}

}  // namespace dstream::cli::client
