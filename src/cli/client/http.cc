#include "cli/client/http.h"

#include <algorithm>
#include <charconv>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <strings.h>

#include <boost/beast/http/status.hpp>

#include "edge/headers.h"

namespace dstream::cli::client {
namespace {

std::string_view trim(std::string_view t) {
    while (!t.empty() && (t.front() == ' ' || t.front() == '\t')) t.remove_prefix(1);
    while (!t.empty() &&
           (t.back() == ' ' || t.back() == '\t' || t.back() == '\r' || t.back() == '\n')) {
        t.remove_suffix(1);
    }
    return t;
}

bool same_name(std::string_view a, std::string_view b) {
    return a.size() == b.size() && ::strncasecmp(a.data(), b.data(), a.size()) == 0;
}

// A field name as the server spells it: HTTP/2 sends names in lowercase
// (RFC 9113 8.2.1), and the commands print the same names over either
// protocol. The server's own fields come from its list; others are
// capitalized word by word (content-type -> Content-Type).
std::string canonical_name(std::string_view lower) {
    std::string_view list = edge::hdr::exposed_headers;
    while (!list.empty()) {
        const auto comma = list.find(',');
        const std::string_view name = trim(list.substr(0, comma));
        if (same_name(name, lower)) return std::string(name);
        list = comma == std::string_view::npos ? "" : list.substr(comma + 1);
    }
    std::string out(lower);
    bool start = true;
    for (char& c : out) {
        if (start && c >= 'a' && c <= 'z') c = static_cast<char>(c - 'a' + 'A');
        start = c == '-';
    }
    return out;
}

void init_curl_once() {
    static const CURLcode rc = curl_global_init(CURL_GLOBAL_DEFAULT);
    if (rc != CURLE_OK) throw std::runtime_error("libcurl: initialization failed");
}

// One exchange: what libcurl's callbacks read and fill.
struct exchange {
    const request& req;
    response& res;
    std::string_view unsent;
    bool stopped_by_sink = false;
    bool http2 = false;  // the answer's status line said HTTP/2
};

std::size_t on_header(char* data, std::size_t size, std::size_t count, void* user) {
    auto& ex = *static_cast<exchange*>(user);
    const std::string_view line = trim(std::string_view(data, size * count));
    if (line.starts_with("HTTP/")) {
        // A status line: of an interim 1xx answer or of the final one, whose
        // headers replace any the interim answer had.
        ex.res.headers.clear();
        const auto sp = line.find(' ');
        const std::string_view rest = sp == std::string_view::npos ? "" : line.substr(sp + 1);
        long status = 0;
        std::from_chars(rest.data(), rest.data() + rest.size(), status);
        ex.res.status = status;
        ex.res.reason = std::string(trim(rest.size() > 3 ? rest.substr(3) : ""));
        ex.http2 = !line.starts_with("HTTP/1");
        // HTTP/2 has no reason phrase: the standard one stands in.
        if (ex.res.reason.empty()) {
            const auto reason = boost::beast::http::obsolete_reason(
                static_cast<boost::beast::http::status>(static_cast<unsigned>(status)));
            if (reason != "<unknown-status>") ex.res.reason.assign(reason.data(), reason.size());
        }
    } else if (const auto colon = line.find(':'); colon != std::string_view::npos) {
        const std::string_view name = trim(line.substr(0, colon));
        ex.res.headers.emplace_back(ex.http2 ? canonical_name(name) : std::string(name),
                                    std::string(trim(line.substr(colon + 1))));
    }
    return size * count;
}

std::size_t on_body(char* data, std::size_t size, std::size_t count, void* user) {
    auto& ex = *static_cast<exchange*>(user);
    const std::string_view bytes(data, size * count);
    if (ex.req.sink && ex.res.status >= 200 && ex.res.status < 300) {
        if (!ex.req.sink(ex.res, bytes)) {
            ex.stopped_by_sink = true;
            return 0;  // libcurl ends the transfer
        }
    } else {
        ex.res.body.append(bytes);
    }
    return bytes.size();
}

std::size_t on_upload(char* buffer, std::size_t size, std::size_t count, void* user) {
    auto& ex = *static_cast<exchange*>(user);
    const std::size_t n = std::min(size * count, ex.unsent.size());
    std::memcpy(buffer, ex.unsent.data(), n);
    ex.unsent.remove_prefix(n);
    return n;
}

// A redirect (a cluster's 307 to the group's leader) sends the body again.
int on_seek(void* user, curl_off_t offset, int origin) {
    auto& ex = *static_cast<exchange*>(user);
    const std::string_view whole = ex.req.body.value_or(std::string_view{});
    if (origin != SEEK_SET || offset < 0 || static_cast<std::size_t>(offset) > whole.size()) {
        return CURL_SEEKFUNC_CANTSEEK;
    }
    ex.unsent = whole.substr(static_cast<std::size_t>(offset));
    return CURL_SEEKFUNC_OK;
}

int on_progress(void* user, curl_off_t, curl_off_t received, curl_off_t, curl_off_t sent) {
    auto& ex = *static_cast<exchange*>(user);
    ex.req.on_progress(static_cast<std::uint64_t>(sent), static_cast<std::uint64_t>(received));
    return 0;
}

}  // namespace

std::optional<std::string> response::header(std::string_view name) const {
    for (const auto& [n, v] : headers) {
        if (same_name(n, name)) return v;
    }
    return std::nullopt;
}

bool response::header_is_true(std::string_view name) const {
    const auto v = header(name);
    return v && same_name(*v, "true");
}

session::session(std::vector<std::string> extra_headers, std::string ca_file)
    : _extra_headers(std::move(extra_headers)), _ca_file(std::move(ca_file)) {
    init_curl_once();
    _curl = curl_easy_init();
    if (_curl == nullptr) throw std::runtime_error("libcurl: cannot create a handle");
}

session::~session() { curl_easy_cleanup(_curl); }

response session::perform(const request& r) {
    response res;
    exchange ex{r, res, r.body.value_or(std::string_view{})};
    // A reset keeps the open connection for the next request.
    curl_easy_reset(_curl);
    char error_text[CURL_ERROR_SIZE] = "";
    curl_easy_setopt(_curl, CURLOPT_ERRORBUFFER, error_text);
    curl_easy_setopt(_curl, CURLOPT_URL, r.url.c_str());
    curl_easy_setopt(_curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(_curl, CURLOPT_CONNECTTIMEOUT, 10L);
    curl_easy_setopt(_curl, CURLOPT_HEADERFUNCTION, on_header);
    curl_easy_setopt(_curl, CURLOPT_HEADERDATA, &ex);
    curl_easy_setopt(_curl, CURLOPT_WRITEFUNCTION, on_body);
    curl_easy_setopt(_curl, CURLOPT_WRITEDATA, &ex);
    // A cluster's node answers a write for a group it does not lead with a
    // 307 to the leader (and one without a replica of the group with a 307
    // to one that has): followed, with the same method and body.
    curl_easy_setopt(_curl, CURLOPT_FOLLOWLOCATION, 1L);
    curl_easy_setopt(_curl, CURLOPT_MAXREDIRS, 4L);
    if (!_ca_file.empty()) curl_easy_setopt(_curl, CURLOPT_CAINFO, _ca_file.c_str());

    const bool sends_body = r.body.has_value() || r.method == "PUT" || r.method == "POST";
    if (r.method == "HEAD") {
        curl_easy_setopt(_curl, CURLOPT_NOBODY, 1L);
    } else if (r.method != "GET") {
        curl_easy_setopt(_curl, CURLOPT_CUSTOMREQUEST, r.method.c_str());
    }
    if (sends_body) {
        curl_easy_setopt(_curl, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(_curl, CURLOPT_READFUNCTION, on_upload);
        curl_easy_setopt(_curl, CURLOPT_READDATA, &ex);
        curl_easy_setopt(_curl, CURLOPT_SEEKFUNCTION, on_seek);
        curl_easy_setopt(_curl, CURLOPT_SEEKDATA, &ex);
        curl_easy_setopt(_curl, CURLOPT_INFILESIZE_LARGE,
                         static_cast<curl_off_t>(ex.unsent.size()));
    }
    curl_slist* headers = nullptr;
    for (const auto& h : _extra_headers) headers = curl_slist_append(headers, h.c_str());
    for (const auto& h : r.headers) headers = curl_slist_append(headers, h.c_str());
    // No 100-continue round trip: the server reads or refuses the body anyway.
    if (sends_body) headers = curl_slist_append(headers, "Expect:");
    curl_easy_setopt(_curl, CURLOPT_HTTPHEADER, headers);
    if (r.on_progress) {
        curl_easy_setopt(_curl, CURLOPT_NOPROGRESS, 0L);
        curl_easy_setopt(_curl, CURLOPT_XFERINFOFUNCTION, on_progress);
        curl_easy_setopt(_curl, CURLOPT_XFERINFODATA, &ex);
    }

    const CURLcode rc = curl_easy_perform(_curl);
    curl_slist_free_all(headers);
    if (rc != CURLE_OK && !ex.stopped_by_sink) {
        res.failure = *error_text != '\0' ? error_text : curl_easy_strerror(rc);
    } else if (res.status == 0) {
        res.failure = "no HTTP answer";
    }
    return res;
}

}  // namespace dstream::cli::client
