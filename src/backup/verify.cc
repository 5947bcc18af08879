#include "backup/verify.h"

#include <fmt/format.h>

#include "state/group_state.h"

namespace dstream::backup {

result<std::vector<std::string>> objects_of_image(std::string_view image, std::uint32_t group) {
    std::uint32_t image_group = 0;
    std::uint64_t index = 0;
    auto state = state::group_state::restore_checkpoint(image, image_group, index);
    if (!state) {
        return make_error(protocol::error_code::invalid_request,
                          fmt::format("the image of group {} does not decode: {}", group,
                                      state.err().message));
    }
    if (image_group != group) {
        return make_error(protocol::error_code::invalid_request,
                          fmt::format("the image of group {} is group {}'s", group, image_group));
    }
    std::vector<std::string> objects;
    const auto collect = [&](const std::string&, const state::stream& s) {
        for (const auto& c : s.chunks) objects.push_back(c.object_key);
        if (s.snapshot && !s.snapshot->object_key.empty()) objects.push_back(s.snapshot->object_key);
    };
    state->for_each_stream(collect);
    state->for_each_retired_stream(collect);
    return objects;
}

verify_report verify_backup(storage::object_store& location, const progress_fn& progress) {
    verify_report report;
    std::string text;
    auto size = location.size(std::string(manifest_name));
    if (!size || !*size) {
        report.problems.push_back("the manifest is missing");
        return report;
    }
    if (auto got = location.get(std::string(manifest_name), 0, **size, text); !got) {
        report.problems.push_back("the manifest cannot be read: " + got.err().message);
        return report;
    }
    auto parsed = parse(text);
    if (!parsed) {
        report.problems.push_back(parsed.err().message);
        return report;
    }
    report.found = std::move(*parsed);
    const manifest& m = *report.found;
    for (const auto& f : m.files) {
        if (auto checked = check_file(location, f, progress); !checked) {
            report.problems.push_back(checked.err().message);
        } else {
            ++report.files_checked;
            report.bytes_checked += f.size;
        }
    }
    for (std::uint32_t g = 0; g < m.group_count; ++g) {
        const file_entry* image = find_file(m, group_image_path(g));
        auto bytes = read_checked(location, *image);
        if (!bytes) continue;  // reported above
        auto objects = objects_of_image(*bytes, g);
        if (!objects) {
            report.problems.push_back(objects.err().message);
            continue;
        }
        for (const auto& key : *objects) {
            if (find_file(m, object_path(key)) == nullptr) {
                report.problems.push_back(fmt::format(
                    "group {} references the object {}, which the backup does not hold", g, key));
            }
        }
    }
    return report;
}

}  // namespace dstream::backup
