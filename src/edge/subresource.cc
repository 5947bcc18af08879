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
    if (head != "snapshot" && head != "retention") return out;
    if (head == "snapshot" && (rest == "parts" || rest.ends_with("/parts"))) {
        out.what = subresource::kind::snapshot_parts;
        return out;
    }
    if (rest.empty() || rest.find('/') != std::string_view::npos) return out;
    auto offset = protocol::parse_offset(rest);
    if (!offset) return offset.err();
    out.what = head == "snapshot" ? subresource::kind::snapshot : subresource::kind::retention;
    out.offset = *offset;
    return out;
}

}  // namespace dstream::edge
