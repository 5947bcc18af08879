#include "storage/detail/s3_xml.h"

#include <charconv>
#include <chrono>
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

// The digits of `text` as a number; nothing unless they all are digits.
std::optional<unsigned> digits(std::string_view text) {
    unsigned value = 0;
    if (text.empty()) return std::nullopt;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (ec != std::errc() || end != text.data() + text.size()) return std::nullopt;
    return value;
}

}  // namespace

std::optional<std::int64_t> parse_s3_timestamp_ms(std::string_view text) {
    // YYYY-MM-DDTHH:MM:SS[.fff...]Z
    if (text.size() < 20 || text.back() != 'Z' || text[4] != '-' || text[7] != '-' ||
        text[10] != 'T' || text[13] != ':' || text[16] != ':') {
        return std::nullopt;
    }
    const auto year = digits(text.substr(0, 4)), month = digits(text.substr(5, 2)),
               day = digits(text.substr(8, 2)), hour = digits(text.substr(11, 2)),
               minute = digits(text.substr(14, 2)), second = digits(text.substr(17, 2));
    if (!year || !month || !day || !hour || !minute || !second || *hour > 23 || *minute > 59 ||
        *second > 60) {
        return std::nullopt;
    }
    unsigned ms = 0;
    const std::string_view rest = text.substr(19, text.size() - 20);
    if (!rest.empty()) {
        if (rest.front() != '.' || rest.size() < 2) return std::nullopt;
        const std::string_view fraction = rest.substr(1);
        const auto all = digits(fraction.substr(0, std::min<std::size_t>(fraction.size(), 3)));
        if (!all || (fraction.size() > 3 && !digits(fraction.substr(3)))) return std::nullopt;
        ms = *all;
        for (std::size_t i = fraction.size(); i < 3; ++i) ms *= 10;
    }
    const std::chrono::year_month_day date{std::chrono::year(static_cast<int>(*year)),
                                           std::chrono::month(*month), std::chrono::day(*day)};
    if (!date.ok()) return std::nullopt;
    const auto at = std::chrono::sys_days(date) + std::chrono::hours(*hour) +
                    std::chrono::minutes(*minute) + std::chrono::seconds(*second) +
                    std::chrono::milliseconds(ms);
    return std::chrono::duration_cast<std::chrono::milliseconds>(at.time_since_epoch()).count();
}

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
        } else if (path == "ListBucketResult/Contents/LastModified") {
            current.modified_ms = parse_s3_timestamp_ms(text).value_or(0);
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
