#include "storage/detail/s3_xml.h"

#include <charconv>
#include <climits>
#include <expat.h>
#include <functional>

namespace dstream::storage::detail {
namespace {

// Each element's own text at its end, by its path from the root
// ("ListBucketResult/Contents/Key"). S3's documents put text only in leaves.
using element_visitor = std::function<void(std::string_view path, std::string_view text)>;

struct walk_state {
    const element_visitor* visit = nullptr;
    std::string path;
    std::vector<std::size_t> path_lengths;  // the path's length before each open element
    std::string text;
};

void on_start(void* data, const XML_Char* name, const XML_Char** /*attributes*/) {
    auto& state = *static_cast<walk_state*>(data);
    state.path_lengths.push_back(state.path.size());
    if (!state.path.empty()) state.path.push_back('/');
    state.path += name;
    state.text.clear();
}

void on_end(void* data, const XML_Char* /*name*/) {
    auto& state = *static_cast<walk_state*>(data);
    (*state.visit)(state.path, state.text);
    state.text.clear();
    state.path.resize(state.path_lengths.back());
    state.path_lengths.pop_back();
}

void on_text(void* data, const XML_Char* text, int length) {
    static_cast<walk_state*>(data)->text.append(text, static_cast<std::size_t>(length));
}

bool walk_xml(std::string_view xml, const element_visitor& visit) {
    if (xml.size() > static_cast<std::size_t>(INT_MAX)) return false;
    XML_Parser parser = XML_ParserCreate("UTF-8");
    if (parser == nullptr) return false;
    walk_state state;
    state.visit = &visit;
    XML_SetUserData(parser, &state);
    XML_SetElementHandler(parser, on_start, on_end);
    XML_SetCharacterDataHandler(parser, on_text);
    const bool parsed =
        XML_Parse(parser, xml.data(), static_cast<int>(xml.size()), XML_TRUE) == XML_STATUS_OK;
    XML_ParserFree(parser);
    return parsed;
}

}  // namespace

std::optional<s3_list_page> parse_s3_list_page(std::string_view xml) {
    s3_list_page page;
    bool truncated = false;
    bool sizes_valid = true;
    object_entry current;
    const bool parsed = walk_xml(xml, [&](std::string_view path, std::string_view text) {
        if (path == "ListBucketResult/Contents/Key") {
            current.key = text;
        } else if (path == "ListBucketResult/Contents/Size") {
            const auto [end, ec] =
                std::from_chars(text.data(), text.data() + text.size(), current.size);
            sizes_valid = sizes_valid && ec == std::errc() && end == text.data() + text.size();
        } else if (path == "ListBucketResult/Contents") {
            page.objects.push_back(std::move(current));
            current = object_entry{};
        } else if (path == "ListBucketResult/IsTruncated") {
            truncated = text == "true";
        } else if (path == "ListBucketResult/NextContinuationToken") {
            page.next_token = text;
        }
    });
    if (!parsed || !sizes_valid) return std::nullopt;
    if (!truncated)
        page.next_token.clear();
    else if (page.next_token.empty())
        return std::nullopt;
    return page;
}

std::string parse_s3_error_code(std::string_view xml) {
    std::string code;
    walk_xml(xml, [&](std::string_view path, std::string_view text) {
        if (path == "Error/Code") code = text;
    });
    return code;
}

std::optional<std::string> parse_s3_upload_id(std::string_view xml) {
    std::string id;
    const bool parsed = walk_xml(xml, [&](std::string_view path, std::string_view text) {
        if (path == "InitiateMultipartUploadResult/UploadId") id = text;
    });
    if (!parsed || id.empty()) return std::nullopt;
    return id;
}

}  // namespace dstream::storage::detail
