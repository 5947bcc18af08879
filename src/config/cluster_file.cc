#include "config/cluster_file.h"

#include <algorithm>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "config/setting.h"

namespace dstream::config {
namespace {

[[noreturn]] void fail(const std::string& source, const std::string& why) {
    throw invalid_setting(fmt::format("cluster file {}: {}", source, why));
}

// The keys of `table` must be `allowed`, each present, or `optional`.
void expect_keys(const toml::table& table, std::initializer_list<std::string_view> allowed,
                 const std::string& source, const std::string& where,
                 std::initializer_list<std::string_view> optional = {}) {
    for (const auto& [key, node] : table) {
        if (std::find(allowed.begin(), allowed.end(), key.str()) == allowed.end() &&
            std::find(optional.begin(), optional.end(), key.str()) == optional.end())
            fail(source, fmt::format("{}unknown key '{}'", where, key.str()));
    }
    for (const std::string_view key : allowed) {
        if (!table.contains(key)) fail(source, fmt::format("{}'{}' is missing", where, key));
    }
}

std::int64_t integer(const toml::table& table, std::string_view key, const std::string& source,
                     const std::string& where) {
    const auto value = table[key].value<std::int64_t>();
    if (!value || !table[key].is_integer())
        fail(source, fmt::format("{}'{}' must be an integer", where, key));
    return *value;
}

std::string text(const toml::table& table, std::string_view key, const std::string& source,
                 const std::string& where) {
    const auto value = table[key].value<std::string>();
    if (!value) fail(source, fmt::format("{}'{}' must be a string", where, key));
    return *value;
}

runtime::host_port address(const toml::table& table, std::string_view key,
                           const std::string& source, const std::string& where) {
    const std::string value = text(table, key, source, where);
    auto parsed = runtime::parse_host_port(value);
    if (!parsed)
        fail(source, fmt::format("{}{} = \"{}\" is not HOST:PORT (an IPv6 address in brackets)",
                                 where, key, value));
    return std::move(*parsed);
}

}  // namespace

runtime::cluster_map parse_cluster_file(std::string_view contents, const std::string& source) {
    toml::table file;
    try {
        file = toml::parse(contents, source);
    } catch (const toml::parse_error& e) {
        fail(source, fmt::format("line {}: {}", e.source().begin.line, e.description()));
    }
    expect_keys(file, {"cluster_id", "groups", "replicas", "node"}, source, "");
    const toml::array* listed = file["node"].as_array();
    if (listed == nullptr || !listed->is_array_of_tables())
        fail(source, "'node' must be [[node]] tables");
    std::vector<runtime::cluster_node> nodes;
    for (std::size_t i = 0; i < listed->size(); ++i) {
        const toml::table& t = *listed->get(i)->as_table();
        const std::string where = fmt::format("node {} of the file (line {}): ", i + 1,
                                              t.source().begin.line);
        expect_keys(t, {"id", "raft", "http"}, source, where, {"admin"});
        const std::int64_t id = integer(t, "id", source, where);
        if (id < 1 || id > UINT32_MAX) fail(source, where + "'id' must be 1 to 4294967295");
        nodes.push_back(runtime::cluster_node{static_cast<std::uint32_t>(id),
                                              address(t, "raft", source, where),
                                              address(t, "http", source, where), std::nullopt});
        if (t.contains("admin")) nodes.back().admin = address(t, "admin", source, where);
    }
    const std::int64_t groups = integer(file, "groups", source, "");
    const std::int64_t replicas = integer(file, "replicas", source, "");
    if (groups < 1 || replicas < 1) fail(source, "groups and replicas must be positive");
    try {
        return runtime::cluster_map(text(file, "cluster_id", source, ""),
                                    static_cast<std::size_t>(groups),
                                    static_cast<unsigned>(replicas), std::move(nodes));
    } catch (const std::invalid_argument& e) {
        fail(source, e.what());
    }
}

runtime::cluster_map read_cluster_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) fail(path, "cannot be read");
    std::ostringstream contents;
    contents << in.rdbuf();
    return parse_cluster_file(contents.str(), path);
}

}  // namespace dstream::config
