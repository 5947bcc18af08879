#include "storage/detail/s3_http.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <cstring>
#include <memory>

#include <curl/curl.h>

#include "storage/detail/s3_encoding.h"
#include "storage/detail/s3_xml.h"

namespace dstream::storage::detail {
namespace {

struct curl_handle_deleter {
    void operator()(CURL* handle) const { curl_easy_cleanup(handle); }
};
struct curl_list_deleter {
    void operator()(curl_slist* list) const { curl_slist_free_all(list); }
};

// One handle per thread, reset before each exchange: it keeps its
// connections (and TLS sessions) from one call to the next.
CURL* thread_handle() {
    thread_local std::unique_ptr<CURL, curl_handle_deleter> handle(curl_easy_init());
    if (handle) curl_easy_reset(handle.get());
    return handle.get();
}

struct exchange {
    CURL* handle = nullptr;
    const s3_request* request = nullptr;
    std::string_view body;  // what is left to send
    s3_response* response = nullptr;
};

std::size_t read_body(char* buffer, std::size_t size, std::size_t count, void* data) {
    auto& state = *static_cast<exchange*>(data);
    const std::size_t n = std::min(size * count, state.body.size());
    std::memcpy(buffer, state.body.data(), n);
    state.body.remove_prefix(n);
    return n;
}

std::size_t write_body(char* bytes, std::size_t size, std::size_t count, void* data) {
    auto& state = *static_cast<exchange*>(data);
    s3_response& response = *state.response;
    if (state.request->partial_body) {
        // The head is complete once its body starts.
        curl_easy_getinfo(state.handle, CURLINFO_RESPONSE_CODE, &response.status);
        if (response.status == 206)
            return state.request->partial_body(response, std::string_view(bytes, size * count))
                       ? size * count
                       : 0;
    }
    response.body.append(bytes, size * count);
    return size * count;
}

bool header_named(std::string_view line, std::string_view name) {
    return line.size() > name.size() && line[name.size()] == ':' &&
           std::equal(name.begin(), name.end(), line.begin(), [](char a, char b) {
               return std::tolower(static_cast<unsigned char>(a)) ==
                      std::tolower(static_cast<unsigned char>(b));
           });
}

std::string_view header_value(std::string_view line, std::size_t name_size) {
    line.remove_prefix(name_size + 1);
    while (!line.empty() && (line.front() == ' ' || line.front() == '\t')) line.remove_prefix(1);
    while (!line.empty() && std::isspace(static_cast<unsigned char>(line.back())))
        line.remove_suffix(1);
    return line;
}

std::size_t read_header(char* bytes, std::size_t size, std::size_t count, void* data) {
    auto& response = *static_cast<exchange*>(data)->response;
    const std::string_view line(bytes, size * count);
    if (header_named(line, "ETag")) {
        response.etag = header_value(line, 4);
    } else if (header_named(line, "Content-Range")) {
        response.content_range = header_value(line, 13);
    } else if (header_named(line, "Content-Length")) {
        const std::string_view text = header_value(line, 14);
        std::uint64_t length = 0;
        const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), length);
        if (ec == std::errc() && end == text.data() + text.size()) response.content_length = length;
    }
    return size * count;
}

bool transient_curl_error(CURLcode code) {
    switch (code) {
        case CURLE_COULDNT_RESOLVE_HOST:
        case CURLE_COULDNT_CONNECT:
        case CURLE_OPERATION_TIMEDOUT:
        case CURLE_SEND_ERROR:
        case CURLE_RECV_ERROR:
        case CURLE_GOT_NOTHING:
        case CURLE_PARTIAL_FILE:
        case CURLE_SSL_CONNECT_ERROR:
        case CURLE_HTTP2:
        case CURLE_HTTP2_STREAM:
            return true;
        default:
            return false;
    }
}

}  // namespace

bool s3_retryable(const s3_request& request, const s3_response& response) {
    if (response.fault != s3_transport_fault::none)
        return response.fault == s3_transport_fault::transient;
    if (response.status >= 500 || response.status == 429) return true;
    if (response.status == 400) return parse_s3_error_code(response.body) == "RequestTimeout";
    if (response.status == 200 && request.error_in_ok_body)
        return !parse_s3_error_code(response.body).empty();
    return false;
}

s3_http::s3_http(const s3_options& options)
    : _sigv4_scope("aws:amz:" + options.region + ":s3"),
      _access_key_id(options.credentials.access_key_id),
      _secret_access_key(options.credentials.secret_access_key),
      _session_token(options.credentials.session_token),
      _connect_timeout(options.connect_timeout),
      _request_timeout(options.request_timeout) {}

s3_response s3_http::perform(const s3_request& request) const {
    s3_response response;
    CURL* handle = thread_handle();
    if (handle == nullptr) {
        response.fault = s3_transport_fault::fatal;
        response.fault_text = "cannot make a curl handle";
        return response;
    }
    exchange state{handle, &request, request.body, &response};
    const std::string url = request.query.empty() ? request.url : request.url + "?" + request.query;

    // libcurl signs our headers too and takes the payload hash from ours;
    // it dates the signature itself (7.88 cannot take a date), and signs the
    // path and query exactly as sent: both are canonical already.
    curl_slist* raw_headers = nullptr;
    const auto add_header = [&raw_headers](const std::string& line) {
        raw_headers = curl_slist_append(raw_headers, line.c_str());
    };
    add_header("x-amz-content-sha256: " + s3_sha256_hex(request.body));
    if (!_session_token.empty()) add_header("x-amz-security-token: " + _session_token);
    for (const auto& line : request.headers) add_header(line);
    const std::unique_ptr<curl_slist, curl_list_deleter> headers(raw_headers);

    curl_easy_setopt(handle, CURLOPT_URL, url.c_str());
    // A key's "./" or "../" is part of its name, not a path to resolve.
    curl_easy_setopt(handle, CURLOPT_PATH_AS_IS, 1L);
    curl_easy_setopt(handle, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(handle, CURLOPT_HTTPHEADER, headers.get());
    curl_easy_setopt(handle, CURLOPT_AWS_SIGV4, _sigv4_scope.c_str());
    curl_easy_setopt(handle, CURLOPT_USERNAME, _access_key_id.c_str());
    curl_easy_setopt(handle, CURLOPT_PASSWORD, _secret_access_key.c_str());
    curl_easy_setopt(handle, CURLOPT_CONNECTTIMEOUT_MS,
                     static_cast<long>(_connect_timeout.count()));
    curl_easy_setopt(handle, CURLOPT_TIMEOUT_MS, static_cast<long>(_request_timeout.count()));
    curl_easy_setopt(handle, CURLOPT_WRITEFUNCTION, write_body);
    curl_easy_setopt(handle, CURLOPT_WRITEDATA, &state);
    curl_easy_setopt(handle, CURLOPT_HEADERFUNCTION, read_header);
    curl_easy_setopt(handle, CURLOPT_HEADERDATA, &state);
    if (request.method == "HEAD") {
        curl_easy_setopt(handle, CURLOPT_NOBODY, 1L);
    } else if (request.method == "PUT" || request.method == "POST") {
        // An upload, not POSTFIELDS: curl would add a form Content-Type.
        curl_easy_setopt(handle, CURLOPT_UPLOAD, 1L);
        curl_easy_setopt(handle, CURLOPT_READFUNCTION, read_body);
        curl_easy_setopt(handle, CURLOPT_READDATA, &state);
        curl_easy_setopt(handle, CURLOPT_INFILESIZE_LARGE,
                         static_cast<curl_off_t>(request.body.size()));
        if (request.method == "POST") curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, "POST");
    } else if (request.method != "GET") {
        curl_easy_setopt(handle, CURLOPT_CUSTOMREQUEST, std::string(request.method).c_str());
    }

    const CURLcode code = curl_easy_perform(handle);
    if (code != CURLE_OK) {
        response.fault =
            transient_curl_error(code) ? s3_transport_fault::transient : s3_transport_fault::fatal;
        response.fault_text = curl_easy_strerror(code);
        return response;
    }
    curl_easy_getinfo(handle, CURLINFO_RESPONSE_CODE, &response.status);
    return response;
}

}  // namespace dstream::storage::detail
