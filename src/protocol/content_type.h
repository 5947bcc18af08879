#pragma once
// Content types of streams (base protocol Sections 5.1, 5.2, 9). A stream keeps
// the content type it was created with; appends must name the same media type,
// compared case-insensitively and without parameters.
#include <string>
#include <string_view>

namespace dstream::protocol {

inline constexpr std::string_view default_content_type = "application/octet-stream";

// The media type without parameters, trimmed and lowercased: "Text/Plain; x=1" -> "text/plain".
std::string media_type_essence(std::string_view content_type);

// Whether two content types name the same media type.
bool same_media_type(std::string_view a, std::string_view b);

// application/json streams store JSON message text (extensions, JSON Message Text).
bool is_json_media_type(std::string_view content_type);

// text/* and application/json travel as text in SSE; everything else as base64
// (base protocol Section 5.8, extensions 9.5).
bool is_text_for_sse(std::string_view content_type);

// A syntactically valid `type/subtype` with token characters.
bool is_valid_content_type(std::string_view content_type);

}  // namespace dstream::protocol
