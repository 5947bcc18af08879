#include "protocol/content_type.h"

#include <algorithm>
#include <cctype>

namespace dstream::protocol {
namespace {

std::string_view trim(std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
}

bool is_token_char(char c) {
    return std::isalnum(static_cast<unsigned char>(c)) != 0 ||
           std::string_view("!#$%&'*+-.^_`|~").find(c) != std::string_view::npos;
}

// The media type without parameters or surrounding blanks (RFC 9110 8.3.1).
std::string_view essence_of(std::string_view content_type) {
    return trim(content_type.substr(0, content_type.find(';')));
}

// Media types are ASCII tokens, compared without the locale (every append
// compares its Content-Type with its stream's).
char ascii_lower(char c) { return c >= 'A' && c <= 'Z' ? static_cast<char>(c + ('a' - 'A')) : c; }

bool equal_ignoring_case(std::string_view a, std::string_view b) {
    return a.size() == b.size() && std::equal(a.begin(), a.end(), b.begin(), [](char x, char y) {
               return ascii_lower(x) == ascii_lower(y);
           });
}

}  // namespace

std::string media_type_essence(std::string_view content_type) {
    std::string out(essence_of(content_type));
    std::transform(out.begin(), out.end(), out.begin(), ascii_lower);
    return out;
}

bool same_media_type(std::string_view a, std::string_view b) {
    // A writer mostly sends the Content-Type its stream was created with.
    return a == b || equal_ignoring_case(essence_of(a), essence_of(b));
}

bool is_json_media_type(std::string_view content_type) {
    return equal_ignoring_case(essence_of(content_type), "application/json");
}

bool is_text_for_sse(std::string_view content_type) {
    const std::string_view essence = essence_of(content_type);
    return equal_ignoring_case(essence.substr(0, 5), "text/") ||
           equal_ignoring_case(essence, "application/json");
}

bool is_valid_content_type(std::string_view content_type) {
    const std::string_view essence = trim(content_type.substr(0, content_type.find(';')));
    const auto slash = essence.find('/');
    if (slash == std::string_view::npos || slash == 0 || slash + 1 == essence.size()) return false;
    return std::all_of(essence.begin(), essence.end(),
                       [](char c) { return c == '/' || is_token_char(c); }) &&
           essence.find('/', slash + 1) == std::string_view::npos;
}

}  // namespace dstream::protocol
