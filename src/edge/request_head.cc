#include "edge/request_head.h"

#include <cstdint>
#include <limits>

namespace dstream::edge {
namespace {

constexpr std::string_view head_end = "\r\n\r\n";

// Only the shape Beast cannot refuse early: a CRLF ending and an 8-byte
// version token ("HTTP/" DIGIT "." DIGIT; Beast checks the characters).
bool plausible_request_line(std::string_view line) {
    if (!line.ends_with('\r')) return false;
    line.remove_suffix(1);
    const auto space = line.rfind(' ');
    constexpr std::size_t version_bytes = 8;
    return space != std::string_view::npos && line.size() - space - 1 == version_bytes;
}

}  // namespace

void prepare_head_parser(request_parser& parser) {
    parser.header_limit(static_cast<std::uint32_t>(max_request_head_bytes));
    parser.body_limit(std::numeric_limits<std::uint64_t>::max());
}

request_head_check check_request_head(std::string_view buffered, request_head_scan& scan) {
    const std::string_view window = buffered.substr(0, max_request_head_bytes);
    if (!scan.line_checked) {
        const auto lf = window.find('\n', scan.scanned);
        if (lf != std::string_view::npos) {
            if (!plausible_request_line(window.substr(0, lf))) return request_head_check::malformed;
            scan.line_checked = true;
        }
    }
    if (window.find(head_end, scan.scanned) != std::string_view::npos) {
        return request_head_check::complete;
    }
    if (window.size() == max_request_head_bytes) return request_head_check::too_large;
    // A head end may begin in the last three bytes seen.
    scan.scanned = window.size() < head_end.size() ? 0 : window.size() - (head_end.size() - 1);
    return request_head_check::incomplete;
}

}  // namespace dstream::edge
