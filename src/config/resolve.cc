#include "config/resolve.h"

#include <algorithm>
#include <filesystem>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "config/parse.h"

namespace dstream::config {
namespace {

toml::table load_file(const std::string& path, const std::vector<setting>& table) {
    if (std::error_code ec; !std::filesystem::is_regular_file(path, ec)) {
        throw invalid_setting(fmt::format("config file {}: no such file", path));
    }
    toml::table file;
    try {
        file = toml::parse_file(path);
    } catch (const toml::parse_error& e) {
        throw invalid_setting(fmt::format("config file {}, line {}: {}", path,
                                          e.source().begin.line, e.description()));
    }
    for (const auto& [key, node] : file) {
        const bool known = key.str() == preset_key ||
                           std::any_of(table.begin(), table.end(),
                                       [&](const setting& s) { return s.key == key.str(); });
        if (!known) {
            throw invalid_setting(fmt::format(
                "config file {}: unknown setting '{}' (`dstream config docs` lists them)", path,
                key.str()));
        }
    }
    return file;
}

std::optional<std::string> environment(const inputs& in, const std::string& name) {
    return in.env ? in.env(name) : std::nullopt;
}

// The preset's own precedence is the same as a setting's: flag > env > file.
void resolve_preset(effective& out, const std::vector<preset>& presets, const inputs& in,
                    const toml::table& file) {
    const auto pick = [&](std::string name, source from, std::string where) {
        const bool known = std::any_of(presets.begin(), presets.end(),
                                       [&](const preset& p) { return p.name == name; });
        if (!known) {
            std::vector<std::string> names;
            for (const auto& p : presets) names.push_back(p.name);
            throw invalid_setting(fmt::format("setting preset ({} = \"{}\"): must be one of {}",
                                              where, name, fmt::join(names, ", ")));
        }
        if (from > out.preset_from) {
            out.preset = std::move(name);
            out.preset_from = from;
        }
    };
    if (const auto* node = file.get(preset_key)) {
        const auto name = node->value<std::string>();
        if (!name)
            throw invalid_setting(
                fmt::format("setting preset (file {}): must be a string", in.config_file));
        pick(*name, source::file, "file " + in.config_file);
    }
    if (auto name = environment(in, env_name(preset_key)))
        pick(*name, source::env, "env " + env_name(preset_key));
    if (auto it = in.flags.find(preset_key); it != in.flags.end())
        pick(it->second, source::flag, "flag --preset");
}

effective_value resolve_one(const setting& s, const effective& so_far, const inputs& in,
                            const toml::table& file) {
    effective_value out{s, s.fallback, source::fallback};
    for (const auto& [name, v] : s.presets) {
        if (name == so_far.preset) out = {s, v, source::preset};
    }
    if (const auto* node = file.get(s.key)) {
        out = {s, parse_toml(s, *node, "file " + in.config_file), source::file};
    }
    const std::string env = env_name(s);
    if (auto text = environment(in, env))
        out = {s, parse_text(s, *text, "env " + env), source::env};
    if (auto it = in.flags.find(s.key); it != in.flags.end()) {
        out = {s, parse_text(s, it->second, "flag " + flag_name(s)), source::flag};
    }
    return out;
}

}  // namespace

std::string_view source_name(source s) {
    switch (s) {
        case source::fallback:
            return "default";
        case source::preset:
            return "preset";
        case source::file:
            return "file";
        case source::env:
            return "env";
        case source::flag:
            return "flag";
    }
    return "default";
}

effective resolve(const std::vector<setting>& table, const std::vector<preset>& presets,
                  const inputs& in) {
    const toml::table file =
        in.config_file.empty() ? toml::table{} : load_file(in.config_file, table);
    effective out;
    out.config_file = in.config_file;
    resolve_preset(out, presets, in, file);
    out.values.reserve(table.size());
    for (const auto& s : table) out.values.push_back(resolve_one(s, out, in, file));
    return out;
}

void store(const effective& e) {
    for (const auto& v : e.values) v.about.store(v.v);
}

}  // namespace dstream::config
