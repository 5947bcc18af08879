#pragma once
// HTTP for the client commands, over libcurl: one connection reused across
// requests, bodies sent from memory (a mapped file or stdin), answers
// collected or handed over as they arrive, redirects followed (a cluster's
// node sends a write to its group's leader).
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include <curl/curl.h>

namespace dstream::cli::client {

struct response {
    long status = 0;      // 0: no answer, see `failure`
    std::string failure;  // why the exchange failed (no connection, broken off, bad URL)
    std::string reason;   // the status line's reason phrase
    std::vector<std::pair<std::string, std::string>> headers;  // in order, names as sent
    std::string body;  // a 2xx body goes to the request's sink instead when it has one

    bool answered() const { return status != 0 && failure.empty(); }
    bool ok() const { return answered() && status >= 200 && status < 300; }
    // The first value of a header, by case-insensitive name.
    std::optional<std::string> header(std::string_view name) const;
    bool header_is_true(std::string_view name) const;
};

struct request {
    std::string method = "GET";
    std::string url;
    std::vector<std::string> headers;  // "Name: value"
    // Sent with a Content-Length; a PUT or POST without one sends an empty body.
    std::optional<std::string_view> body;
    // Receives a 2xx body as it arrives, after the headers are in `head`;
    // returning false ends the exchange early without a failure.
    std::function<bool(const response& head, std::string_view bytes)> sink;
    // Bytes sent and received so far in this exchange.
    std::function<void(std::uint64_t sent, std::uint64_t received)> on_progress;
};

class session {
public:
    // `extra_headers` ("Name: value") go with every request, e.g. Authorization;
    // `ca_file`, a PEM file of the CAs an https server is checked against
    // (empty: the system's).
    explicit session(std::vector<std::string> extra_headers, std::string ca_file = {});
    ~session();
    session(const session&) = delete;
    session& operator=(const session&) = delete;

    response perform(const request& r);

private:
    CURL* _curl;
    std::vector<std::string> _extra_headers;
    std::string _ca_file;
};

}  // namespace dstream::cli::client
