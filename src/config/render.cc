#include "config/render.h"

#include <algorithm>
#include <sstream>

#include <fmt/format.h>
#include <toml++/toml.h>

namespace dstream::config {
namespace {

std::string toml_text(const std::string& s) {
    std::ostringstream out;
    out << toml::value<std::string>(s);
    return out.str();
}

std::string toml_value(const value& v) {
    if (const auto* b = std::get_if<bool>(&v)) return *b ? "true" : "false";
    if (const auto* n = std::get_if<std::uint64_t>(&v)) return std::to_string(*n);
    return toml_text(std::get<std::string>(v));
}

// Where a value came from, and its size or duration when the number alone
// is hard to read.
std::string toml_comment(const effective_value& ev, const std::string& preset_name) {
    std::string comment(source_name(ev.from));
    if (ev.from == source::preset) comment += " " + preset_name;
    if (std::holds_alternative<std::uint64_t>(ev.v) && ev.about.shown_as != unit::count) {
        comment += ", " + describe(ev.about, ev.v);
    }
    return comment;
}

void append_line(std::string& out, const std::string& assignment, const std::string& comment) {
    constexpr std::size_t comment_column = 40;
    out += assignment;
    out.append(assignment.size() < comment_column ? comment_column - assignment.size() : 1, ' ');
    out += "# " + comment + "\n";
}

std::string code(const std::string& s) { return "`" + s + "`"; }

}  // namespace

std::string render_toml(const effective& e) {
    std::string out =
        "# The effective configuration; precedence: flag > env > file > preset > default.\n";
    if (!e.config_file.empty()) out += "# Config file: " + e.config_file + "\n";
    if (!e.preset.empty()) {
        append_line(out, std::string(preset_key) + " = " + toml_text(e.preset),
                    std::string(source_name(e.preset_from)));
    }
    for (const auto& ev : e.values) {
        append_line(out, ev.about.key + " = " + toml_value(ev.v), toml_comment(ev, e.preset));
    }
    return out;
}

std::string render_settings_markdown(const std::vector<setting>& table) {
    std::string out =
        "| key | flag | environment | default | accepts | description |\n"
        "| --- | --- | --- | --- | --- | --- |\n";
    for (const auto& s : table) {
        out += fmt::format("| {} | {} | {} | {} | {} | {} |\n", code(s.key), code(flag_name(s)),
                           code(env_name(s)), describe(s, s.fallback), describe_bounds(s), s.help);
    }
    return out;
}

std::string render_presets_markdown(const std::vector<setting>& table,
                                    const std::vector<preset>& presets) {
    std::string out = "| key |";
    std::string rule = "| --- |";
    for (const auto& p : presets) {
        out += " " + p.name + " |";
        rule += " --- |";
    }
    out += "\n" + rule + "\n";
    for (const auto& s : table) {
        if (s.presets.empty()) continue;
        out += "| " + code(s.key) + " |";
        for (const auto& p : presets) out += " " + describe(s, value_under(s, p.name)) + " |";
        out += "\n";
    }
    return out;
}

}  // namespace dstream::config
