#include "edge/subresource.h"

#include "protocol/offset.h"

namespace dstream::edge {

result<subresource> parse_subresource(std::string_view path) {
    subresource out;
    const auto slash = path.find('/');
    const std::string_view head = path.substr(0, slash);
    const std::string_view rest = slash == std::string_view::npos ? std::string_view{} : path.substr(slash + 1);
    if (head == "bootstrap" && slash == std::string_view::npos) {
        out.what = subresource::kind::bootstrap;
        return out;
    }
    if (head == "incarnation") {
        // incarnation/{token}/{chunk|snapshot}/{offset}
        const auto bad = [] {
            return make_error(protocol::error_code::invalid_resource,
                              "expected incarnation/{token}/chunk|snapshot/{offset}");
        };
        const auto s1 = rest.find('/');
        if (s1 == std::string_view::npos) return bad();
        const std::string_view token = rest.substr(0, s1);
        const std::string_view tail = rest.substr(s1 + 1);
        const auto s2 = tail.find('/');
        if (s2 == std::string_view::npos) return bad();
        const std::string_view what = tail.substr(0, s2);
        const std::string_view offset = tail.substr(s2 + 1);
        std::uint64_t t = 0;
        bool ok = token.size() == 16 && token[0] != '0';
        for (char c : token) {
            if (c < '0' || c > '9') ok = false;
            else t = t * 10 + static_cast<std::uint64_t>(c - '0');
        }
        auto o = protocol::parse_offset(offset);
        if (!ok || t < (std::uint64_t{1} << 52) || t >= (std::uint64_t{1} << 53) || !o ||
            (what != "chunk" && what != "snapshot")) {
            return bad();
        }
        out.what = what == "chunk" ? subresource::kind::immutable_chunk : subresource::kind::immutable_snapshot;
        out.token = t;
        out.offset = *o;
        return out;
    }
    if (head != "snapshot" && head != "retention") return out;
    if (head == "snapshot" && rest == "parts") {
        out.what = subresource::kind::snapshot_parts;
        return out;
    }
    std::string_view offset_text = rest;
    auto what = head == "snapshot" ? subresource::kind::snapshot : subresource::kind::retention;
    if (head == "snapshot" && rest.ends_with("/parts")) {
        // The offset of a part is checked as an offset and otherwise ignored (extensions 2.2).
        offset_text.remove_suffix(std::string_view("/parts").size());
        what = subresource::kind::snapshot_part;
    }
    if (offset_text.empty() || offset_text.find('/') != std::string_view::npos) return out;
    auto offset = protocol::parse_offset(offset_text);
    if (!offset) return offset.err();
    out.what = what;
    out.offset = *offset;
    return out;
}

}  // namespace dstream::edge
