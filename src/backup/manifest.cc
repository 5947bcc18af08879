#include "backup/manifest.h"

#include <algorithm>
#include <charconv>
#include <set>

#include <fmt/format.h>

#include "protocol/digest.h"

namespace dstream::backup {
namespace {

constexpr std::string_view magic_line = "dstream-backup 1";

error bad(std::string message) {
    return make_error(protocol::error_code::invalid_request, "backup manifest: " + std::move(message));
}

bool is_hex(std::string_view s, std::size_t length) {
    return s.size() == length && std::all_of(s.begin(), s.end(), [](char c) {
               return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f');
           });
}

template <typename T>
bool parse_number(std::string_view text, T& out, int base = 10) {
    if (text.empty()) return false;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), out, base);
    return ec == std::errc() && end == text.data() + text.size();
}

// The line's words, split on single spaces; the last takes the rest of the
// line when `rest_from` is set (a file's path).
std::vector<std::string_view> words(std::string_view line, std::size_t max_words) {
    std::vector<std::string_view> out;
    while (!line.empty() && out.size() + 1 < max_words) {
        const auto space = line.find(' ');
        if (space == std::string_view::npos) break;
        out.push_back(line.substr(0, space));
        line.remove_prefix(space + 1);
    }
    out.push_back(line);
    return out;
}

}  // namespace

std::string group_image_path(std::uint32_t group) { return fmt::format("groups/g{}.ckpt", group); }

std::string object_path(std::string_view object_key) {
    return "objects/" + std::string(object_key);
}

bool is_valid_path(std::string_view path) {
    if (path.empty() || path.size() > 1024) return false;
    std::size_t start = 0;
    while (start <= path.size()) {
        auto end = path.find('/', start);
        if (end == std::string_view::npos) end = path.size();
        const std::string_view segment = path.substr(start, end - start);
        if (segment.empty() || segment == "." || segment == "..") return false;
        for (char c : segment) {
            const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
                            (c >= '0' && c <= '9') || c == '.' || c == '_' || c == '-';
            if (!ok) return false;
        }
        start = end + 1;
    }
    return true;
}

bool is_valid_backup_id(std::string_view id) { return is_hex(id, 32); }

status check(const manifest& m) {
    if (!is_valid_backup_id(m.id)) return bad("the backup id is not 32 lowercase hex digits");
    if (m.cluster_id.empty() || m.cluster_id.find_first_of(" \n\r\t") != std::string::npos)
        return bad("the cluster id is empty or holds white space");
    if (m.group_count == 0) return bad("no groups");
    if (m.groups.size() != m.group_count) return bad("not one entry for each group");
    for (std::uint32_t g = 0; g < m.group_count; ++g) {
        if (m.groups[g].group != g) return bad(fmt::format("group {} is missing or out of order", g));
    }
    std::set<std::string_view> paths;
    for (const auto& f : m.files) {
        if (!is_valid_path(f.path)) return bad("a file has an invalid path");
        if (!is_hex(f.blake3, 64)) return bad("the digest of " + f.path + " is not 64 hex digits");
        if (!paths.insert(f.path).second) return bad(f.path + " is listed twice");
    }
    for (std::uint32_t g = 0; g < m.group_count; ++g) {
        if (!paths.contains(group_image_path(g)))
            return bad(fmt::format("the image of group {} is not listed", g));
    }
    return ok_status();
}

std::string render(const manifest& m) {
    std::string out;
    out += magic_line;
    out += '\n';
    out += fmt::format("id {}\ncreated_ms {}\ncluster_id {}\ngroups {}\n", m.id, m.created_ms,
                       m.cluster_id, m.group_count);
    for (const auto& g : m.groups) {
        out += fmt::format("group {} index {} term {} history {:016x} streams {}\n", g.group,
                           g.index, g.term, g.history_id, g.streams);
    }
    for (const auto& f : m.files) out += fmt::format("file {} {} {}\n", f.blake3, f.size, f.path);
    out += fmt::format("end {}\n", protocol::to_hex(protocol::blake3_256(out)));
    return out;
}

result<manifest> parse(std::string_view text) {
    // The end line first: a manifest cut anywhere, or changed, fails here.
    if (text.empty() || text.back() != '\n') return bad("it is truncated (no end line)");
    const std::string_view body_and_end = text.substr(0, text.size() - 1);
    const auto last_newline = body_and_end.rfind('\n');
    if (last_newline == std::string_view::npos) return bad("it is truncated (no end line)");
    const std::string_view end_line = body_and_end.substr(last_newline + 1);
    const std::string_view body = text.substr(0, last_newline + 1);
    if (!end_line.starts_with("end ") || !is_hex(end_line.substr(4), 64))
        return bad("it is truncated (no end line)");
    if (protocol::to_hex(protocol::blake3_256(body)) != end_line.substr(4))
        return bad("its digest does not match its text (damaged or truncated)");

    manifest m;
    bool seen_id = false, seen_created = false, seen_cluster = false, seen_groups = false;
    std::size_t line_no = 0;
    std::string_view rest = body;
    while (!rest.empty()) {
        const auto nl = rest.find('\n');
        const std::string_view line = rest.substr(0, nl);
        rest.remove_prefix(nl + 1);
        ++line_no;
        const auto fail = [&](std::string_view why) {
            return bad(fmt::format("line {}: {}", line_no, why));
        };
        if (line_no == 1) {
            if (line != magic_line) return fail("not a dstream backup manifest of version 1");
            continue;
        }
        const auto w = words(line, line.starts_with("file ") ? 4 : 16);
        const std::string_view kind = w[0];
        if (kind == "id" && w.size() == 2 && !seen_id) {
            m.id = std::string(w[1]);
            seen_id = true;
        } else if (kind == "created_ms" && w.size() == 2 && !seen_created) {
            if (!parse_number(w[1], m.created_ms)) return fail("a bad time");
            seen_created = true;
        } else if (kind == "cluster_id" && w.size() == 2 && !seen_cluster) {
            m.cluster_id = std::string(w[1]);
            seen_cluster = true;
        } else if (kind == "groups" && w.size() == 2 && !seen_groups) {
            if (!parse_number(w[1], m.group_count)) return fail("a bad group count");
            seen_groups = true;
        } else if (kind == "group" && w.size() == 10 && w[2] == "index" && w[4] == "term" &&
                   w[6] == "history" && w[8] == "streams") {
            group_entry g;
            if (!parse_number(w[1], g.group) || !parse_number(w[3], g.index) ||
                !parse_number(w[5], g.term) || !is_hex(w[7], 16) ||
                !parse_number(w[7], g.history_id, 16) || !parse_number(w[9], g.streams)) {
                return fail("a bad group entry");
            }
            m.groups.push_back(g);
        } else if (kind == "file" && w.size() == 4) {
            file_entry f;
            f.blake3 = std::string(w[1]);
            if (!parse_number(w[2], f.size)) return fail("a bad file size");
            f.path = std::string(w[3]);
            m.files.push_back(std::move(f));
        } else {
            return fail("an unknown or repeated record");
        }
    }
    if (!seen_id || !seen_created || !seen_cluster || !seen_groups)
        return bad("a header record is missing");
    if (auto checked = check(m); !checked) return checked.err();
    return m;
}

const file_entry* find_file(const manifest& m, std::string_view path) {
    const auto it = std::find_if(m.files.begin(), m.files.end(),
                                 [&](const file_entry& f) { return f.path == path; });
    return it == m.files.end() ? nullptr : &*it;
}

}  // namespace dstream::backup
