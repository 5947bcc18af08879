#include "cli/client/multipart.h"

#include <strings.h>

namespace dstream::cli::client {
namespace {

constexpr std::string_view crlf = "\r\n";

std::optional<std::string> boundary_of(std::string_view content_type) {
    constexpr std::string_view key = "boundary=";
    const auto at = content_type.find(key);
    if (at == std::string_view::npos) return std::nullopt;
    std::string_view b = content_type.substr(at + key.size());
    if (b.starts_with('"')) {
        const auto close = b.find('"', 1);
        if (close == std::string_view::npos) return std::nullopt;
        b = b.substr(1, close - 1);
    } else {
        b = b.substr(0, b.find(';'));
    }
    if (b.empty()) return std::nullopt;
    return std::string(b);
}

// The Content-Type among a part's header lines.
std::string part_content_type(std::string_view headers) {
    constexpr std::string_view name = "content-type:";
    while (!headers.empty()) {
        const auto end = headers.find(crlf);
        std::string_view line = headers.substr(0, end);
        if (line.size() > name.size() &&
            ::strncasecmp(line.data(), name.data(), name.size()) == 0) {
            line.remove_prefix(name.size());
            while (line.starts_with(' ')) line.remove_prefix(1);
            return std::string(line);
        }
        if (end == std::string_view::npos) break;
        headers.remove_prefix(end + crlf.size());
    }
    return {};
}

}  // namespace

std::optional<std::vector<body_part>> split_multipart(std::string_view content_type,
                                                      std::string_view body) {
    const auto boundary = boundary_of(content_type);
    if (!boundary) return std::nullopt;
    const std::string delimiter = "--" + *boundary;
    // The CRLF before a delimiter belongs to the delimiter, not to the part.
    const std::string next_delimiter = std::string(crlf) + delimiter;
    if (!body.starts_with(delimiter)) return std::nullopt;
    std::size_t pos = delimiter.size();
    std::vector<body_part> parts;
    while (true) {
        if (body.substr(pos, 2) == "--") return parts;
        if (body.substr(pos, 2) != crlf) return std::nullopt;
        pos += crlf.size();
        std::string_view headers;
        if (body.substr(pos, 2) == crlf) {
            pos += crlf.size();
        } else {
            const auto end = body.find("\r\n\r\n", pos);
            if (end == std::string_view::npos) return std::nullopt;
            headers = body.substr(pos, end - pos);
            pos = end + 4;
        }
        const auto end = body.find(next_delimiter, pos);
        if (end == std::string_view::npos) return std::nullopt;
        parts.push_back({part_content_type(headers), body.substr(pos, end - pos)});
        pos = end + next_delimiter.size();
    }
}

}  // namespace dstream::cli::client
