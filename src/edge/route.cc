#include "edge/route.h"

#include <algorithm>

#include "protocol/utf8.h"

namespace dstream::edge {
namespace {

using protocol::error_code;

int hex_value(char c) {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
}

constexpr std::string_view v1_prefix = "/v1/stream/";
constexpr std::string_view operator_prefix = "/__ursula/";

// extensions 1.1: UTF-8 (validated by the caller's decoding), no '/', NUL,
// `..`, not `streams`, not starting with `$`.
status check_stream_id(std::string_view id) {
    const auto bad = [](std::string msg) {
        return make_error(error_code::invalid_stream_id, std::move(msg));
    };
    if (id.empty()) return bad("stream id is empty");
    if (id.find('\0') != std::string_view::npos || id.find('/') != std::string_view::npos ||
        id.find("..") != std::string_view::npos) {
        return bad("stream id contains a reserved sequence");
    }
    if (id == "streams") return bad("stream id 'streams' is reserved");
    if (id.front() == '$') return bad("stream ids starting with '$' are reserved");
    return ok_status();
}

}  // namespace

bool is_valid_bucket_id(std::string_view id) {
    return id.size() >= 4 && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
               return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '-';
           });
}

namespace {

// Appends `in` with its percent-escapes decoded; false for a malformed one.
bool append_decoded(std::string_view in, bool plus_is_space, std::string& out) {
    // The runs between escapes go in whole: most targets have none.
    while (!in.empty()) {
        const auto at = plus_is_space ? in.find_first_of("%+") : in.find('%');
        out.append(in.substr(0, at));
        if (at == std::string_view::npos) return true;
        if (in[at] == '+') {
            out.push_back(' ');
            in.remove_prefix(at + 1);
            continue;
        }
        if (at + 2 >= in.size()) return false;
        const int hi = hex_value(in[at + 1]);
        const int lo = hex_value(in[at + 2]);
        if (hi < 0 || lo < 0) return false;
        out.push_back(static_cast<char>(hi * 16 + lo));
        in.remove_prefix(at + 3);
    }
    return true;
}

error malformed_escape() {
    return make_error(error_code::invalid_request, "malformed percent-escape");
}

error not_utf8() {
    return make_error(error_code::invalid_request,
                      "a path segment is not valid UTF-8 once percent-decoded");
}

// Appends the decoded `segment`; the router's refusal when it is not whole
// escapes of UTF-8. Only what is appended is checked.
status append_segment(std::string_view segment, std::string& out) {
    const std::size_t from = out.size();
    if (!append_decoded(segment, false, out)) return malformed_escape();
    if (!protocol::is_valid_utf8(std::string_view(out).substr(from))) return not_utf8();
    return ok_status();
}

}  // namespace

result<std::string> percent_decode(std::string_view in, bool plus_is_space) {
    std::string out;
    out.reserve(in.size());
    if (!append_decoded(in, plus_is_space, out)) return malformed_escape();
    return out;
}

request_target split_request_target(std::string_view target) {
    if (target.starts_with("http://") || target.starts_with("https://")) {
        const auto path = target.find('/', target.find("//") + 2);
        target = path == std::string_view::npos ? std::string_view("/") : target.substr(path);
    }
    const auto question = target.find('?');
    if (question == std::string_view::npos) return {target, {}, false};
    return {target.substr(0, question), target.substr(question + 1), true};
}

result<route> resolve_route(std::string_view path) {
    route r;
    if (path.empty() || path.front() != '/') {
        return make_error(error_code::invalid_request, "request target must be an absolute path");
    }
    if (path.starts_with(operator_prefix) || path == "/__ursula") {
        r.what = route::kind::operator_path;
        r.path = std::string(path);
        return r;
    }
    // The key is decoded in place: one allocation per request on the hot path.
    r.key.reserve(v1_prefix.size() + path.size());
    if (path.starts_with(v1_prefix)) {
        // The base protocol's id is the rest of the path, slashes included.
        r.where = surface::base_v1;
        r.key = "v1/stream/";
        if (auto st = append_segment(path.substr(v1_prefix.size()), r.key); !st) return st.err();
        const std::string_view id = std::string_view(r.key).substr(v1_prefix.size() - 1);
        if (id == "__ds" || id.starts_with("__ds/")) {
            r.what = route::kind::reserved;
            r.key.clear();
            return r;
        }
        if (id.empty() || id.size() > max_stream_key_bytes || id.find('\0') != std::string::npos) {
            return make_error(error_code::invalid_stream_id,
                              "stream id is empty, too long or contains NUL");
        }
        r.what = route::kind::stream;
        return r;
    }

    // Bucketed surface: the raw path splits on '/' before its segments are
    // decoded. Every segment is decoded and checked first, so that a
    // malformed escape or a segment that is not UTF-8 anywhere is the error
    // reported, before the ids are judged. The key is decoded in place.
    const std::string_view raw = path.substr(1);
    const auto first_slash = raw.find('/');
    const std::string_view after_bucket =
        first_slash == std::string_view::npos ? std::string_view() : raw.substr(first_slash + 1);
    const auto second_slash = after_bucket.find('/');
    if (auto st = append_segment(raw.substr(0, first_slash), r.key); !st) return st.err();
    const std::size_t bucket_size = r.key.size();
    r.key += '/';
    if (auto st = append_segment(after_bucket.substr(0, second_slash), r.key); !st) {
        return st.err();
    }
    if (second_slash != std::string_view::npos) {
        std::string_view rest = after_bucket.substr(second_slash + 1);
        while (true) {
            const auto slash = rest.find('/');
            r.subresource.emplace_back();
            if (auto st = append_segment(rest.substr(0, slash), r.subresource.back()); !st) {
                return st.err();
            }
            if (slash == std::string_view::npos) break;
            rest.remove_prefix(slash + 1);
        }
    }
    const std::string_view bucket = std::string_view(r.key).substr(0, bucket_size);
    if (bucket.empty()) {
        r.key.clear();
        r.subresource.clear();
        return r;  // kind::none
    }
    if (!is_valid_bucket_id(bucket)) {
        return make_error(error_code::invalid_bucket_id, "bucket id must match ^[a-z0-9_-]{4,64}$");
    }
    if (after_bucket.empty()) {
        r.what = route::kind::bucket;
        r.key.resize(bucket_size);
        r.bucket = std::move(r.key);
        r.key.clear();
        return r;
    }
    const std::string_view stream_id = std::string_view(r.key).substr(bucket_size + 1);
    if (auto st = check_stream_id(stream_id); !st) return st.err();
    if (stream_id.size() > max_stream_key_bytes || r.key.size() > max_stream_key_bytes) {
        return make_error(error_code::invalid_stream_id, "stream key exceeds 122 bytes");
    }
    r.what = r.subresource.empty() ? route::kind::stream : route::kind::stream_subresource;
    return r;
}

}  // namespace dstream::edge
