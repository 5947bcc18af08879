#pragma once
// The parts of a multipart/mixed body (RFC 2046), as /bootstrap answers
// (extensions 3.2).
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace dstream::cli::client {

struct body_part {
    std::string content_type;  // empty when the part has none
    std::string_view body;     // a view into the whole body
};

// Nothing when `content_type` names no boundary or the body is not framed by it.
std::optional<std::vector<body_part>> split_multipart(std::string_view content_type,
                                                      std::string_view body);

}  // namespace dstream::cli::client
