#include "edge/route.h"

#include <algorithm>
#include <vector>

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

result<std::string> percent_decode(std::string_view in, bool plus_is_space) {
    std::string out;
    out.reserve(in.size());
    for (std::size_t i = 0; i < in.size(); ++i) {
        const char c = in[i];
        if (c == '%') {
            if (i + 2 >= in.size()) {
                return make_error(error_code::invalid_request, "malformed percent-escape");
            }
            const int hi = hex_value(in[i + 1]);
            const int lo = hex_value(in[i + 2]);
            if (hi < 0 || lo < 0)
                return make_error(error_code::invalid_request, "malformed percent-escape");
            out.push_back(static_cast<char>(hi * 16 + lo));
            i += 2;
        } else if (c == '+' && plus_is_space) {
            out.push_back(' ');
        } else {
            out.push_back(c);
        }
    }
    return out;
}

request_target split_request_target(std::string_view target) {
    if (target.starts_with("http://") || target.starts_with("https://")) {
        const auto path = target.find('/', target.find("//") + 2);
        target = path == std::string_view::npos ? std::string_view("/") : target.substr(path);
    }
    const auto question = target.find('?');
    if (question == std::string_view::npos) return {target, {}};
    return {target.substr(0, question), target.substr(question + 1)};
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
    if (path.starts_with(v1_prefix)) {
        auto id = percent_decode(path.substr(v1_prefix.size()), false);
        if (!id) return id.err();
        r.where = surface::base_v1;
        r.path = std::string(path);
        if (*id == "__ds" || id->starts_with("__ds/")) {
            r.what = route::kind::reserved;
            return r;
        }
        if (id->empty() || id->size() > max_stream_key_bytes ||
            id->find('\0') != std::string::npos) {
            return make_error(error_code::invalid_stream_id,
                              "stream id is empty, too long or contains NUL");
        }
        r.what = route::kind::stream;
        r.key = std::string("v1/stream/") + *id;
        return r;
    }

    // Bucketed surface: split the raw path on '/', then decode each segment.
    std::vector<std::string_view> raw;
    std::string_view rest = path.substr(1);
    while (true) {
        const auto slash = rest.find('/');
        raw.push_back(rest.substr(0, slash));
        if (slash == std::string_view::npos) break;
        rest.remove_prefix(slash + 1);
    }
    std::vector<std::string> segments;
    for (auto s : raw) {
        auto d = percent_decode(s, false);
        if (!d) return d.err();
        segments.push_back(std::move(*d));
    }
    r.path = std::string(path);
    if (segments.empty() || segments[0].empty()) return r;  // kind::none
    if (!is_valid_bucket_id(segments[0])) {
        return make_error(error_code::invalid_bucket_id, "bucket id must match ^[a-z0-9_-]{4,64}$");
    }
    if (segments.size() == 1 || (segments.size() == 2 && segments[1].empty())) {
        r.what = route::kind::bucket;
        r.bucket = segments[0];
        return r;
    }
    if (auto st = check_stream_id(segments[1]); !st) return st.err();
    if (segments[1].size() > max_stream_key_bytes ||
        segments[0].size() + 1 + segments[1].size() > max_stream_key_bytes) {
        return make_error(error_code::invalid_stream_id, "stream key exceeds 122 bytes");
    }
    r.key = segments[0] + "/" + segments[1];
    if (segments.size() == 2) {
        r.what = route::kind::stream;
        return r;
    }
    r.what = route::kind::stream_subresource;
    for (std::size_t i = 2; i < segments.size(); ++i) {
        if (i > 2) r.subresource += '/';
        r.subresource += segments[i];
    }
    return r;
}

}  // namespace dstream::edge
