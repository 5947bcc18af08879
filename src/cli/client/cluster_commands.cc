// `dstream cluster status URL`: each group's leader and term, and each
// replica's commit and applied index, from every node's /__ursula/cluster.
#include <map>
#include <optional>

#include <fmt/format.h>

#include "cli/client/client_commands.h"
#include "cli/client/common.h"
#include "cli/client/report.h"

namespace dstream::cli::client {
namespace {

// What one node says, or why it said nothing.
struct node_answer {
    std::uint64_t id = 0;
    std::string http;
    std::optional<nlohmann::json> status;
    std::string failure;
};

std::optional<nlohmann::json> fetch_status(session& s, const std::string& base,
                                           std::string& failure) {
    const response r = s.perform({.method = "GET", .url = base + "/__ursula/cluster"});
    if (!r.ok()) {
        failure = r.answered() ? fmt::format("HTTP {}", r.status) : r.failure;
        return std::nullopt;
    }
    auto parsed = nlohmann::json::parse(r.body, nullptr, false);
    if (parsed.is_discarded() || !parsed.contains("groups")) {
        failure = "the answer is not a cluster status";
        return std::nullopt;
    }
    return parsed;
}

std::string base_of(std::string url) {
    while (url.ends_with('/')) url.pop_back();
    return url;
}

// One row per group: the leader and term the most recent term names, then
// each replica's commit/applied.
void print_table(const std::vector<node_answer>& nodes) {
    struct replica {
        std::uint64_t commit = 0, applied = 0;
        std::string role;
    };
    struct row {
        std::uint64_t leader = 0, term = 0;
        std::map<std::uint64_t, replica> replicas;
    };
    std::map<std::uint64_t, row> rows;
    for (const auto& n : nodes) {
        if (!n.status) continue;
        for (const auto& g : (*n.status)["groups"]) {
            row& r = rows[g.value("group", 0ull)];
            const std::uint64_t term = g.value("term", 0ull);
            if (term >= r.term) {
                r.term = term;
                if (g.value("leader", 0ull) != 0) r.leader = g.value("leader", 0ull);
            }
            r.replicas[n.id] = {g.value("commit", 0ull), g.value("applied", 0ull),
                                g.value("role", std::string())};
        }
    }
    fmt::print("{:>5}  {:>6}  {:>6}  {}\n", "group", "leader", "term",
               "replicas (node: role commit/applied)");
    for (const auto& [group, r] : rows) {
        std::string replicas;
        for (const auto& [id, rep] : r.replicas) {
            replicas += fmt::format("{}{}: {} {}/{}", replicas.empty() ? "" : "  ", id, rep.role,
                                    rep.commit, rep.applied);
        }
        fmt::print("{:>5}  {:>6}  {:>6}  {}\n", group,
                   r.leader == 0 ? std::string("-") : std::to_string(r.leader), r.term, replicas);
    }
    for (const auto& n : nodes) {
        if (!n.status) fmt::print("node {} ({}): no status: {}\n", n.id, n.http, n.failure);
    }
}

int run_status(const url_options& o) {
    session s(o.common.headers, o.common.cacert);
    std::string failure;
    const auto first = fetch_status(s, base_of(o.common.url), failure);
    if (!first) {
        response broken;
        broken.failure = "no cluster status at " + o.common.url + ": " + failure;
        return report_failure(broken, o.common.json);
    }
    std::vector<node_answer> nodes;
    for (const auto& n : (*first)["nodes"]) {
        node_answer a;
        a.id = n.value("node", 0ull);
        a.http = n.value("http", std::string());
        if (a.id == first->value("node", 0ull)) {
            a.status = *first;
        } else {
            a.status = fetch_status(s, "http://" + a.http, a.failure);
        }
        nodes.push_back(std::move(a));
    }
    if (o.common.json) {
        nlohmann::json out{{"cluster_id", first->value("cluster_id", std::string())},
                           {"nodes", nlohmann::json::array()}};
        for (const auto& n : nodes) {
            nlohmann::json node{{"node", n.id}, {"http", n.http}};
            if (n.status) {
                node["status"] = *n.status;
            } else {
                node["failure"] = n.failure;
            }
            out["nodes"].push_back(std::move(node));
        }
        print_json(out);
    } else {
        fmt::print("cluster {}\n", first->value("cluster_id", std::string()));
        print_table(nodes);
    }
    for (const auto& n : nodes) {
        if (!n.status) return exit_failure;
    }
    return exit_ok;
}

}  // namespace

void add_cluster_commands(CLI::App& app, std::vector<command>& out) {
    CLI::App* cluster = app.add_subcommand("cluster", "A cluster's state (docs/operations.md)")
                            ->group("Client")
                            ->require_subcommand(1);
    add_client_command(*cluster, out,
                       {"status",
                        "Print each group's leader and term, and each replica's commit and "
                        "applied index, asking every node the one at URL names; exits 1 when a "
                        "node does not answer",
                        "dstream cluster status http://10.0.0.1:4437"},
                       run_status);
}

}  // namespace dstream::cli::client
