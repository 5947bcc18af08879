#include "config/parse.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <sstream>

#include <fmt/format.h>

namespace dstream::config {
namespace {

[[noreturn]] void refuse(const setting& s, std::string_view where, std::string_view shown,
                         std::string_view why) {
    throw invalid_setting(fmt::format("setting {} ({} = {}): {}", s.key, where, shown, why));
}

[[noreturn]] void refuse_bounds(const setting& s, std::string_view where, std::string_view shown) {
    refuse(s, where, shown, "must be " + describe_bounds(s));
}

std::string quoted(std::string_view text) { return fmt::format("\"{}\"", text); }

std::string_view trim(std::string_view t) {
    while (!t.empty() && t.front() == ' ') t.remove_prefix(1);
    while (!t.empty() && t.back() == ' ') t.remove_suffix(1);
    return t;
}

// The multiplier of a byte-size suffix ("" is 1), or nothing.
std::optional<std::uint64_t> suffix_multiplier(std::string_view suffix) {
    if (suffix.empty()) return 1;
    constexpr std::pair<std::string_view, std::uint64_t> suffixes[] = {
        {"KiB", kib(1)}, {"MiB", mib(1)}, {"GiB", gib(1)}, {"TiB", tib(1)}};
    for (const auto& [name, size] : suffixes) {
        if (suffix == name) return size;
    }
    return std::nullopt;
}

std::optional<std::uint64_t> parse_integer(const setting& s, std::string_view text) {
    text = trim(text);
    std::uint64_t n = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
    if (ec != std::errc() || end == text.data()) return std::nullopt;
    const std::string_view rest = trim(text.substr(static_cast<std::size_t>(end - text.data())));
    const auto multiplier = s.shown_as == unit::bytes
                                ? suffix_multiplier(rest)
                                : (rest.empty() ? std::optional<std::uint64_t>(1) : std::nullopt);
    if (!multiplier || (n != 0 && n > UINT64_MAX / *multiplier)) return std::nullopt;
    return n * *multiplier;
}

value checked_integer(const setting& s, std::uint64_t n, std::string_view where,
                      std::string_view shown) {
    if (n < s.min || n > s.max) refuse_bounds(s, where, shown);
    return n;
}

value checked_text(const setting& s, std::string text, std::string_view where) {
    if (!s.choices.empty() &&
        std::find(s.choices.begin(), s.choices.end(), text) == s.choices.end()) {
        refuse_bounds(s, where, quoted(text));
    }
    if (s.check) {
        if (const std::string why = s.check(text); !why.empty())
            refuse(s, where, quoted(text), why);
    }
    return text;
}

}  // namespace

value parse_text(const setting& s, std::string_view text, std::string_view where) {
    if (std::holds_alternative<bool>(s.fallback)) {
        if (text == "true" || text == "1") return true;
        if (text == "false" || text == "0") return false;
        refuse_bounds(s, where, quoted(text));
    }
    if (std::holds_alternative<std::uint64_t>(s.fallback)) {
        const auto n = parse_integer(s, text);
        if (!n) refuse_bounds(s, where, quoted(text));
        return checked_integer(s, *n, where, quoted(text));
    }
    return checked_text(s, std::string(text), where);
}

value parse_toml(const setting& s, const toml::node& node, std::string_view where) {
    if (const auto* b = node.as_boolean(); b && std::holds_alternative<bool>(s.fallback)) {
        return b->get();
    }
    if (const auto* i = node.as_integer(); i && std::holds_alternative<std::uint64_t>(s.fallback)) {
        const std::int64_t n = i->get();
        const std::string shown = std::to_string(n);
        if (n < 0) refuse_bounds(s, where, shown);
        return checked_integer(s, static_cast<std::uint64_t>(n), where, shown);
    }
    // Strings: text settings, and byte sizes written with a suffix.
    if (const auto* t = node.as_string(); t && !std::holds_alternative<bool>(s.fallback)) {
        return parse_text(s, t->get(), where);
    }
    std::ostringstream type;
    type << "a TOML " << node.type();
    refuse_bounds(s, where, type.str());
}

}  // namespace dstream::config
