#include "storage/s3_object_store.h"

#include <charconv>
#include <mutex>
#include <thread>

#include <curl/curl.h>
#include <spdlog/spdlog.h>

#include "storage/detail/s3_backoff.h"
#include "storage/detail/s3_encoding.h"
#include "storage/detail/s3_http.h"
#include "storage/detail/s3_xml.h"
#include "storage/storage_metrics.h"

namespace dstream::storage {
namespace {

using detail::s3_query;
using detail::s3_request;
using detail::s3_response;
using protocol::error_code;

// S3's own bounds on a multipart upload.
constexpr std::uint64_t min_part_bytes = 5u << 20;
constexpr std::uint64_t max_part_bytes = 5ull << 30;
constexpr unsigned max_parts = 10000;

// What S3 said, for the log and the error: "503 SlowDown" or curl's account.
std::string describe(const s3_response& response) {
    if (response.fault != detail::s3_transport_fault::none) return response.fault_text;
    std::string text = std::to_string(response.status);
    if (const std::string code = detail::parse_s3_error_code(response.body); !code.empty())
        text += " " + code;
    return text;
}

std::string xml_escaped(std::string_view text) {
    std::string out;
    for (const char c : text) {
        if (c == '&')
            out += "&amp;";
        else if (c == '<')
            out += "&lt;";
        else if (c == '>')
            out += "&gt;";
        else
            out.push_back(c);
    }
    return out;
}

class s3_store;

// Holds the bytes until multipart_threshold, then sends parts of part_bytes
// as they fill; finish() puts a small object whole or completes the upload.
class s3_writer final : public object_writer {
public:
    s3_writer(s3_store& store, std::string key) : _store(store), _key(std::move(key)) {}
    ~s3_writer() override;
    status write(std::string_view bytes) override;
    status finish() override;

private:
    status send_full_parts();
    status send_part(std::string_view bytes);

    s3_store& _store;
    std::string _key;  // the caller's key, without the store's prefix
    std::string _pending;
    std::string _upload_id;           // from the upload's creation to its completion
    std::vector<std::string> _etags;  // of parts 1, 2, ...
    bool _done = false;               // finished, or failed: no more writes
};

class s3_store final : public object_store {
public:
    s3_store(s3_options options, runtime::random_source& random, s3_backoff_wait wait)
        : _options(std::move(options)),
          _http(_options),
          _random(random),
          _wait(std::move(wait)),
          _bucket_url(bucket_url(_options)) {}

    status put(const std::string& key, std::string_view bytes) override {
        s3_request request{.method = "PUT", .url = object_url(key), .body = bytes};
        const s3_response response = call(request, object_op::put);
        if (response.status != 200) return failure("PutObject", key, response);
        return ok_status();
    }

    result<std::unique_ptr<object_writer>> open_writer(const std::string& key) override {
        return std::unique_ptr<object_writer>(std::make_unique<s3_writer>(*this, key));
    }

    status get(const std::string& key, std::uint64_t offset, std::uint64_t length,
               std::string& out) override {
        if (length == 0) {
            // No range names zero bytes: the object need only exist.
            auto bytes = size(key);
            if (!bytes) return bytes.err();
            if (!*bytes || **bytes < offset)
                return failure("GetObject", key, "no such object or range");
            out.clear();
            return ok_status();
        }
        s3_request request = ranged_get(key, offset, length);
        s3_response response = call(request, object_op::get);
        if (response.status != 206) return failure("GetObject", key, response);
        if (!answers_range(response, offset, length) || response.body.size() < length)
            return failure("GetObject", key, "an answer of another range or length");
        response.body.resize(length);
        out = std::move(response.body);
        return ok_status();
    }

    bool streams_ranges() const override { return true; }

    // A ranged GET whose body goes to `sink` as curl delivers it. A fault
    // after some bytes asks again from the byte reached, and an attempt that
    // brought bytes starts the count of attempts afresh: the whole transfer's
    // time includes the reader's, so a slow one may outlast a request
    // timeout without the store failing.
    status stream_range(const std::string& key, std::uint64_t offset, std::uint64_t length,
                        range_sink& sink) override {
        if (length == 0) return ok_status();
        std::uint64_t reached = 0;
        unsigned failed_attempts = 0;
        for (;;) {
            const std::uint64_t first = offset + reached;
            const std::uint64_t left = length - reached;
            bool wrong_answer = false;
            bool reader_gone = false;
            s3_request request = ranged_get(key, first, left);
            request.partial_body = [&](const s3_response& head, std::string_view bytes) {
                if (!answers_range(head, first, left)) {
                    wrong_answer = true;
                    return false;
                }
                // A longer range than asked (answers_range) ends the transfer
                // where ours ends.
                const std::string_view ours = bytes.substr(0, length - reached);
                if (!sink.write(ours)) {
                    reader_gone = true;
                    return false;
                }
                reached += ours.size();
                return ours.size() == bytes.size();
            };
            const std::uint64_t before = reached;
            const s3_response response = _http.perform(request);
            if (reader_gone) return ok_status();
            if (wrong_answer)
                return failure("GetObject", key, "an answer of another range or length");
            if (reached == length) return ok_status();  // a fault after the last byte is none
            // A 206 that ends early without a transport fault is no answer of the range.
            if (response.status == 206 && response.fault == detail::s3_transport_fault::none)
                return failure("GetObject", key, "an answer of another range or length");
            if (reached > before) failed_attempts = 0;
            if (++failed_attempts >= _options.max_attempts ||
                !detail::s3_retryable(request, response))
                return failure("GetObject", key, response);
            back_off(object_op::stream_range, failed_attempts - 1);
        }
    }

    result<std::optional<std::uint64_t>> size(const std::string& key) override {
        const s3_response response =
            call(s3_request{.method = "HEAD", .url = object_url(key)}, object_op::size);
        // A HEAD has no body to tell a missing key from a missing bucket.
        if (response.status == 404) return std::optional<std::uint64_t>();
        if (response.status != 200 || !response.content_length)
            return failure("HeadObject", key, response);
        return std::optional<std::uint64_t>(*response.content_length);
    }

    status remove(const std::string& key) override {
        const s3_response response =
            call(s3_request{.method = "DELETE", .url = object_url(key)}, object_op::remove);
        const bool gone = response.status == 204 || response.status == 200 ||
                          (response.status == 404 &&
                           detail::parse_s3_error_code(response.body) != "NoSuchBucket");
        if (!gone) return failure("DeleteObject", key, response);
        return ok_status();
    }

    result<std::vector<object_entry>> list(const std::string& prefix) override {
        const std::string full_prefix = full_key(prefix);
        const std::string store_prefix = full_key("");
        std::vector<object_entry> entries;
        std::string token;
        do {
            s3_query query{{"list-type", "2"}, {"prefix", full_prefix}};
            if (!token.empty()) query.emplace_back("continuation-token", token);
            s3_request request{.method = "GET",
                               .url = _bucket_url + "/",
                               .query = detail::s3_canonical_query(std::move(query))};
            const s3_response response = call(request, object_op::list);
            if (response.status != 200) return failure("ListObjectsV2", prefix, response);
            auto page = detail::parse_s3_list_page(response.body);
            if (!page) return failure("ListObjectsV2", prefix, "an unreadable listing");
            for (auto& object : page->objects) {
                if (!object.key.starts_with(store_prefix)) continue;  // S3 lists none such
                object.key.erase(0, store_prefix.size());
                entries.push_back(std::move(object));
            }
            token = std::move(page->next_token);
        } while (!token.empty());
        return entries;
    }

    // The writer's calls.
    result<std::string> create_upload(const std::string& key) {
        s3_request request{.method = "POST", .url = object_url(key), .query = "uploads="};
        const s3_response response = call(request, object_op::open_writer);
        if (response.status != 200) return failure("CreateMultipartUpload", key, response);
        auto id = detail::parse_s3_upload_id(response.body);
        if (!id) return failure("CreateMultipartUpload", key, "an answer without an upload id");
        return std::move(*id);
    }

    result<std::string> upload_part(const std::string& key, const std::string& upload_id,
                                    unsigned number, std::string_view bytes) {
        s3_request request{.method = "PUT",
                           .url = object_url(key),
                           .query = detail::s3_canonical_query(
                               {{"partNumber", std::to_string(number)}, {"uploadId", upload_id}}),
                           .body = bytes};
        const s3_response response = call(request, object_op::open_writer);
        if (response.status != 200 || response.etag.empty())
            return failure("UploadPart", key, response);
        return response.etag;
    }

    status complete_upload(const std::string& key, const std::string& upload_id,
                           const std::vector<std::string>& etags) {
        std::string body = "<CompleteMultipartUpload>";
        for (std::size_t i = 0; i < etags.size(); ++i)
            body += "<Part><PartNumber>" + std::to_string(i + 1) + "</PartNumber><ETag>" +
                    xml_escaped(etags[i]) + "</ETag></Part>";
        body += "</CompleteMultipartUpload>";
        s3_request request{.method = "POST",
                           .url = object_url(key),
                           .query = detail::s3_canonical_query({{"uploadId", upload_id}}),
                           .headers = {"Content-Type: application/xml"},
                           .body = body,
                           .error_in_ok_body = true};
        const s3_response response = call(request, object_op::open_writer);
        if (response.status != 200 || !detail::parse_s3_error_code(response.body).empty())
            return failure("CompleteMultipartUpload", key, response);
        return ok_status();
    }

    void abort_upload(const std::string& key, const std::string& upload_id) {
        s3_request request{.method = "DELETE",
                           .url = object_url(key),
                           .query = detail::s3_canonical_query({{"uploadId", upload_id}})};
        const s3_response response = call(request, object_op::open_writer);
        // The parts stay billed until a bucket lifecycle rule removes them.
        if (response.status != 204 && response.status != 404)
            spdlog::warn("s3: AbortMultipartUpload of {:?} failed: {}", key, describe(response));
    }

    const s3_options& options() const { return _options; }

private:
    static std::string bucket_url(const s3_options& options) {
        if (!options.endpoint.empty()) return options.endpoint + "/" + options.location.bucket;
        const std::string host = "s3." + options.region + ".amazonaws.com";
        // A dotted name does not match the certificate of *.s3.REGION...: path-style.
        if (options.location.bucket.find('.') != std::string::npos)
            return "https://" + host + "/" + options.location.bucket;
        return "https://" + options.location.bucket + "." + host;
    }

    std::string full_key(const std::string& key) const {
        return _options.location.prefix.empty() ? key : _options.location.prefix + "/" + key;
    }

    std::string object_url(const std::string& key) const {
        return _bucket_url + "/" + detail::s3_uri_encode(full_key(key), detail::slash::keep);
    }

    // One S3 call, attempted again while its failure may pass; each retry is
    // counted under `op`, the object_store call it serves (a writer's calls
    // under open_writer).
    s3_response call(const s3_request& request, object_op op) {
        for (unsigned retry = 0;; ++retry) {
            s3_response response = _http.perform(request);
            if (retry + 1 >= _options.max_attempts || !detail::s3_retryable(request, response))
                return response;
            back_off(op, retry);
        }
    }

    void back_off(object_op op, unsigned retry) {
        _metrics.of(op).retries.inc();
        _wait(detail::s3_backoff(retry, _options.backoff_base, _options.backoff_cap, _random));
    }

    s3_request ranged_get(const std::string& key, std::uint64_t offset,
                          std::uint64_t length) const {
        return s3_request{.method = "GET",
                          .url = object_url(key),
                          .headers = {"Range: bytes=" + std::to_string(offset) + "-" +
                                      std::to_string(offset + length - 1)}};
    }

    // Whether a 206 is the answer of [offset, offset + length): its
    // Content-Range names exactly that range (a server may send another).
    // Whether a 206's Content-Range holds the `length` bytes from `offset` at
    // its start: it starts there and ends there or later. A longer range is
    // taken (s3rver answers "bytes=0-0" with the whole object) and cut; a
    // range that starts elsewhere or ends early is no read.
    static bool answers_range(const s3_response& response, std::uint64_t offset,
                              std::uint64_t length) {
        const std::string start = "bytes " + std::to_string(offset) + "-";
        if (!response.content_range.starts_with(start)) return false;
        const std::string_view rest = std::string_view(response.content_range).substr(start.size());
        std::uint64_t last = 0;
        const auto [end, ec] = std::from_chars(rest.data(), rest.data() + rest.size(), last);
        return ec == std::errc() && end != rest.data() + rest.size() && *end == '/' &&
               last >= offset + length - 1;
    }

    // Errors name the call and S3's answer, never a key (extensions 11: no
    // object keys in messages); the log line names it.
    static error failure(std::string_view operation, const std::string& key,
                         const std::string& what) {
        spdlog::warn("s3: {} of {:?} failed: {}", operation, key, what);
        return make_error(error_code::cold_store_failed,
                          "the cold store failed: S3 " + std::string(operation) + ": " + what);
    }
    static error failure(std::string_view operation, const std::string& key,
                         const s3_response& response) {
        return failure(operation, key, describe(response));
    }

    s3_options _options;
    storage_metrics& _metrics = storage_metrics::get();
    detail::s3_http _http;
    runtime::random_source& _random;
    s3_backoff_wait _wait;
    std::string _bucket_url;
};

s3_writer::~s3_writer() {
    if (!_upload_id.empty()) _store.abort_upload(_key, _upload_id);
}

status s3_writer::write(std::string_view bytes) {
    if (_done)
        return make_error(error_code::cold_store_failed,
                          "the cold store failed: a writer after its end");
    _pending.append(bytes);
    if (_upload_id.empty()) {
        if (_pending.empty() || _pending.size() < _store.options().multipart_threshold)
            return ok_status();
        auto id = _store.create_upload(_key);
        if (!id) {
            _done = true;
            return id.err();
        }
        _upload_id = std::move(*id);
    }
    return send_full_parts();
}

status s3_writer::send_full_parts() {
    const std::uint64_t part_bytes = _store.options().part_bytes;
    std::size_t sent = 0;
    while (_pending.size() - sent >= part_bytes) {
        if (auto part = send_part(std::string_view(_pending).substr(sent, part_bytes)); !part)
            return part;
        sent += part_bytes;
    }
    _pending.erase(0, sent);
    return ok_status();
}

status s3_writer::send_part(std::string_view bytes) {
    if (_etags.size() == max_parts) {
        _done = true;
        return make_error(error_code::cold_store_failed,
                          "the cold store failed: an object of more than 10000 parts");
    }
    auto etag =
        _store.upload_part(_key, _upload_id, static_cast<unsigned>(_etags.size() + 1), bytes);
    if (!etag) {
        _done = true;
        return etag.err();
    }
    _etags.push_back(std::move(*etag));
    return ok_status();
}

status s3_writer::finish() {
    if (_done)
        return make_error(error_code::cold_store_failed,
                          "the cold store failed: a writer after its end");
    if (_upload_id.empty()) {
        _done = true;
        return _store.put(_key, _pending);
    }
    if (!_pending.empty()) {
        if (auto part = send_part(_pending); !part) return part;
        _pending.clear();
    }
    auto completed = _store.complete_upload(_key, _upload_id, _etags);
    _done = true;
    // A failed completion still leaves the upload to abort; a completed one has none.
    if (completed) _upload_id.clear();
    return completed;
}

}  // namespace

void sleep_this_thread(std::chrono::milliseconds wait) { std::this_thread::sleep_for(wait); }

result<std::unique_ptr<object_store>> make_s3_object_store(s3_options options,
                                                           runtime::random_source& random,
                                                           s3_backoff_wait wait) {
    const auto invalid = [](std::string message) {
        return make_error(error_code::invalid_request, std::move(message));
    };
    if (options.credentials.access_key_id.empty() || options.credentials.secret_access_key.empty())
        return invalid(
            "the S3 store has no credentials (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY)");
    while (options.endpoint.ends_with('/')) options.endpoint.pop_back();
    if (!options.endpoint.empty() && !options.endpoint.starts_with("http://") &&
        !options.endpoint.starts_with("https://"))
        return invalid("an S3 endpoint is an http:// or https:// URL");
    if (options.region.empty()) return invalid("the S3 store has no region");
    if (options.part_bytes < min_part_bytes || options.part_bytes > max_part_bytes)
        return invalid("S3 parts are 5 MiB to 5 GiB");
    if (options.max_attempts == 0) return invalid("an S3 call has one attempt at least");
    if (!wait) return invalid("the S3 store has no way to wait between attempts");
    // Before any thread makes a handle: curl_global_init is not safe beside other threads.
    static std::once_flag curl_ready;
    std::call_once(curl_ready, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
    return std::unique_ptr<object_store>(
        std::make_unique<s3_store>(std::move(options), random, std::move(wait)));
}

}  // namespace dstream::storage
