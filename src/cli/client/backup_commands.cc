// The operator commands of backups (docs/operations.md, "Backups and
// restores"): `backup create`, `backup verify`, `restore` and `accept-loss`.
// All but `backup verify` talk to a node's admin listener (--admin-listen);
// the node reads and writes the backup's location itself, group by group,
// each group's work on its leader.
#include <chrono>
#include <fstream>
#include <map>
#include <thread>

#include <unistd.h>

#include <fmt/format.h>

#include "backup/location.h"
#include "backup/manifest.h"
#include "backup/verify.h"
#include "cli/client/client_commands.h"
#include "cli/client/common.h"
#include "cli/client/progress.h"
#include "cli/client/report.h"

namespace dstream::cli::client {
namespace {

using json = nlohmann::json;

// How long a group without a leader (an election) is waited for.
constexpr auto leader_wait = std::chrono::seconds(15);

struct admin_options {
    std::string url;
    std::string token_file;
    std::string cacert;
    bool json = false;
};

void add_admin_options(CLI::App& cmd, admin_options& o) {
    cmd.add_option("ADMIN_URL", o.url,
                   "The node's admin listener, e.g. http://127.0.0.1:4438 (serve --admin-listen)")
        ->required()
        ->check([](const std::string& url) -> std::string {
            if (url.starts_with("http://") || url.starts_with("https://")) return "";
            return "the URL must start with http:// or https://";
        });
    cmd.add_option("--admin-token-file", o.token_file,
                   "A file holding the admin listener's bearer token (serve --admin-token-file)")
        ->envname("DSTREAM_ADMIN_TOKEN_FILE");
    add_cacert_option(cmd, o.cacert);
    cmd.add_flag("--json", o.json, "Print the outcome as one JSON object on stdout");
}

std::string base_of(std::string url) {
    while (url.ends_with('/')) url.pop_back();
    return url;
}

// Why a command failed: on stderr, or as {"failure": ...} under --json.
int fail(const std::string& why, bool as_json) {
    if (as_json) {
        print_json({{"failure", why}});
    } else {
        fmt::print(stderr, "dstream: {}\n", why);
    }
    return exit_failure;
}

// The admin listener of the node given, and every call to it. A group's
// work goes to the group's leader: a node that does not lead answers 503
// NO_LEADER naming the leader, whose admin listener the node's own listing
// names (a cluster file's `admin` addresses); during an election the call
// is repeated until a leader answers.
class admin_client {
public:
    explicit admin_client(const admin_options& o)
        : _base(base_of(o.url)), _session(headers(o), o.cacert) {}

    std::string error;  // why the last call failed: for the exit's message
    bool answered = true;

    std::optional<json> call(const std::string& method, const std::string& path,
                             const json& body = nullptr) {
        const std::string text = body.is_null() ? std::string() : body.dump();
        std::string base = _base;
        const auto deadline = std::chrono::steady_clock::now() + leader_wait;
        for (;;) {
            request r{.method = method, .url = base + path};
            if (!body.is_null()) {
                r.headers.push_back("Content-Type: application/json");
                r.body = text;
            }
            const response res = _session.perform(r);
            answered = res.answered();
            if (!res.answered()) {
                error = fmt::format("no answer from {}: {}", base, res.failure);
                return std::nullopt;
            }
            json parsed = json::parse(res.body, nullptr, false);
            if (res.ok() && !parsed.is_discarded()) return parsed;
            std::string code = "HTTP " + std::to_string(res.status);
            std::string message;
            if (!parsed.is_discarded() && parsed.contains("error")) {
                code = parsed["error"].value("code", code);
                message = parsed["error"].value("message", std::string());
            }
            error = message.empty() ? code : code + ": " + message;
            if (code != "NO_LEADER" || std::chrono::steady_clock::now() >= deadline) {
                return std::nullopt;
            }
            const std::uint64_t leader = parsed.value("leader", 0ull);
            if (leader != 0) {
                const std::string to = admin_of(leader);
                if (to.empty()) {
                    error += fmt::format(" (node {} leads it, and the cluster file names no "
                                         "admin listener of it: run the command against it)",
                                         leader);
                    return std::nullopt;
                }
                if (to != base) {
                    base = to;
                    continue;
                }
            }
            // No leader yet (an election), or one this node learns of later.
            std::this_thread::sleep_for(std::chrono::milliseconds(250));
        }
    }

    // Prints why the last call failed; 3 when the node did not answer, else 1.
    int failed(bool as_json) const {
        fail(error, as_json);
        return answered ? exit_failure : exit_no_answer;
    }

private:
    static std::vector<std::string> headers(const admin_options& o) {
        std::vector<std::string> out;
        if (o.token_file.empty()) return out;
        std::ifstream in(o.token_file);
        std::string token;
        std::getline(in, token);
        while (!token.empty() && (token.back() == '\r' || token.back() == ' ')) token.pop_back();
        if (!token.empty()) out.push_back("Authorization: Bearer " + token);
        return out;
    }

    // The admin URL of node `id`, from the given node's listing; empty when
    // it names none.
    std::string admin_of(std::uint64_t id) {
        if (!_listed) {
            _listed = true;
            const response res = _session.perform({.method = "GET", .url = _base + "/__ursula/admin/node"});
            const json parsed = json::parse(res.body, nullptr, false);
            if (res.ok() && !parsed.is_discarded() && parsed.contains("nodes")) {
                for (const auto& n : parsed["nodes"]) {
                    if (n.contains("admin") && n["admin"].is_string()) {
                        _admins[n.value("node", 0ull)] = "http://" + n["admin"].get<std::string>();
                    }
                }
            }
        }
        const auto it = _admins.find(id);
        return it == _admins.end() ? std::string() : it->second;
    }

    std::string _base;
    session _session;
    bool _listed = false;
    std::map<std::uint64_t, std::string> _admins;
};

// Progress by group on stderr, one line redrawn, only when it is a terminal.
class group_progress {
public:
    group_progress(std::string label, std::uint32_t groups)
        : _enabled(::isatty(STDERR_FILENO) == 1), _label(std::move(label)), _groups(groups) {}
    ~group_progress() {
        if (_drawn) fmt::print(stderr, "\r\033[K");
    }
    group_progress(const group_progress&) = delete;
    group_progress& operator=(const group_progress&) = delete;

    void update(std::uint32_t done, std::uint64_t bytes) {
        if (!_enabled) return;
        _drawn = true;
        fmt::print(stderr, "\r\033[K{}: group {}/{}", _label, done, _groups);
        if (bytes > 0) fmt::print(stderr, ", {:.1f} MiB", static_cast<double>(bytes) / (1 << 20));
        std::fflush(stderr);
    }

private:
    bool _enabled;
    bool _drawn = false;
    std::string _label;
    std::uint32_t _groups;
};

// ------------------------------------------------------------- backup create

struct create_options {
    admin_options admin;
    std::string to;
};

int run_create(const create_options& o) {
    admin_client node(o.admin);
    const auto begun = node.call("POST", "/__ursula/backup/begin", {{"location", o.to}});
    if (!begun) return node.failed(o.admin.json);
    backup::manifest m;
    m.id = begun->value("backup_id", std::string());
    m.cluster_id = begun->value("cluster_id", std::string());
    m.group_count = begun->value("group_count", 0u);
    m.created_ms = begun->value("created_ms", std::int64_t{0});
    const auto started = std::chrono::steady_clock::now();
    std::uint64_t bytes = 0;
    {
        group_progress meter("backup", m.group_count);
        for (std::uint32_t g = 0; g < m.group_count; ++g) {
            meter.update(g, bytes);
            const auto group = node.call("POST", fmt::format("/__ursula/backup/groups/{}", g),
                                         {{"location", o.to}, {"backup_id", m.id}});
            if (!group) return node.failed(o.admin.json);
            backup::group_entry entry;
            entry.group = g;
            entry.index = group->value("index", 0ull);
            entry.term = group->value("term", 0ull);
            entry.history_id = std::stoull(group->value("history_id", std::string("0")), nullptr, 16);
            entry.streams = group->value("streams", 0ull);
            m.groups.push_back(entry);
            for (const auto& f : (*group)["files"]) {
                m.files.push_back(backup::file_entry{f.value("path", std::string()),
                                                     f.value("size", 0ull),
                                                     f.value("blake3", std::string())});
                bytes += f.value("size", 0ull);
            }
            meter.update(g + 1, bytes);
        }
    }
    if (auto checked = backup::check(m); !checked) return fail(checked.err().message, o.admin.json);
    const auto written = node.call("POST", "/__ursula/backup/manifest",
                                   {{"location", o.to}, {"manifest", backup::render(m)}});
    if (!written) return node.failed(o.admin.json);
    const double seconds =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
    if (o.admin.json) {
        print_json({{"backup_id", m.id},
                    {"location", o.to},
                    {"groups", m.group_count},
                    {"files", m.files.size()},
                    {"bytes", bytes},
                    {"seconds", seconds}});
    } else {
        fmt::print(stderr, "backup {}: {} groups, {} files, {:.1f} MiB in {:.1f} s\n", m.id,
                   m.group_count, m.files.size(), static_cast<double>(bytes) / (1 << 20), seconds);
        fmt::print("{}\n", m.id);
    }
    return exit_ok;
}

// ------------------------------------------------------------- backup verify

struct verify_options {
    std::string location;
    std::string s3_endpoint;
    std::string s3_region = "us-east-1";
    bool json = false;
};

int run_verify(const verify_options& o) {
    auto store = backup::open_location(o.location, {o.s3_endpoint, o.s3_region});
    if (!store) return fail(store.err().message, o.json);
    backup::verify_report report;
    {
        progress meter("verify", 0);
        std::uint64_t done = 0;
        report = backup::verify_backup(**store, [&](std::uint64_t bytes) {
            done += bytes;
            meter.update(done);
        });
    }
    if (o.json) {
        json out{{"whole", report.whole()},
                 {"files_checked", report.files_checked},
                 {"bytes_checked", report.bytes_checked},
                 {"problems", report.problems}};
        if (report.found) out["backup_id"] = report.found->id;
        print_json(out);
    } else if (report.whole()) {
        fmt::print("backup {} is whole: {} files, {:.1f} MiB checked\n", report.found->id,
                   report.files_checked, static_cast<double>(report.bytes_checked) / (1 << 20));
    } else {
        for (const auto& p : report.problems) fmt::print(stderr, "backup verify: {}\n", p);
        fmt::print(stderr, "backup verify: the backup at {} is NOT whole ({} problems)\n",
                   o.location, report.problems.size());
    }
    return report.whole() ? exit_ok : exit_failure;
}

// ------------------------------------------------------------- restore

struct restore_options {
    admin_options admin;
    std::string from;
};

void print_streams(const json& streams) {
    for (const auto& s : streams) {
        const auto text = [&](const char* name) {
            return s.contains(name) && s[name].is_string() ? s[name].get<std::string>()
                                                          : std::string("-");
        };
        if (s["incarnation"].is_null()) {
            fmt::print("  {}  removed (token {})\n", s.value("stream", std::string()),
                       text("before"));
            continue;
        }
        fmt::print("  {}  token {} (was {}), previous {} below offset {}, tail {}\n",
                   s.value("stream", std::string()), text("incarnation"), text("before"),
                   text("previous_incarnation"), s.value("inherited_offset", 0ull),
                   s.value("tail", 0ull));
    }
}

int run_restore(const restore_options& o) {
    admin_client node(o.admin);
    const auto info = node.call("GET", "/__ursula/admin/node");
    if (!info) return node.failed(o.admin.json);
    const std::uint32_t groups = info->value("group_count", 0u);
    json out{{"location", o.from}, {"groups", json::array()}};
    // Two passes: every group's files checked and its objects in place
    // first, so that a damaged backup is refused before any group is
    // rewound; then one restore_group per group.
    std::vector<std::uint64_t> copied(groups, 0);
    {
        group_progress meter("restore: checking the backup", groups);
        for (std::uint32_t g = 0; g < groups; ++g) {
            meter.update(g, 0);
            const auto group = node.call("POST", fmt::format("/__ursula/restore/groups/{}", g),
                                         {{"location", o.from}, {"prepare", true}});
            if (!group) {
                fail("nothing was restored: " + node.error, o.admin.json);
                return node.answered ? exit_failure : exit_no_answer;
            }
            copied[g] = group->value("objects_copied", 0ull);
        }
    }
    {
        group_progress meter("restore", groups);
        for (std::uint32_t g = 0; g < groups; ++g) {
            meter.update(g, 0);
            auto group = node.call("POST", fmt::format("/__ursula/restore/groups/{}", g),
                                   {{"location", o.from}});
            if (!group) return node.failed(o.admin.json);
            (*group)["objects_copied"] = group->value("objects_copied", 0ull) + copied[g];
            out["backup_id"] = group->value("backup_id", std::string());
            out["groups"].push_back(*group);
            meter.update(g + 1, 0);
        }
    }
    if (o.admin.json) {
        print_json(out);
        return exit_ok;
    }
    std::size_t already = 0;
    for (const auto& g : out["groups"]) {
        already += g.value("already_restored", false) ? 1 : 0;
        fmt::print("group {}: {} (history {})\n", g.value("group", 0u),
                   g.value("already_restored", false) ? "already restored from this backup"
                                                      : "restored",
                   g.value("history_id", std::string()));
        print_streams(g["streams"]);
    }
    fmt::print(stderr, "restore of backup {}: {} groups, {} of them restored before\n",
               out.value("backup_id", std::string()), groups, already);
    return exit_ok;
}

// ------------------------------------------------------------- accept-loss

struct loss_options {
    admin_options admin;
    std::uint32_t group = 0;
};

int run_accept_loss(const loss_options& o) {
    admin_client node(o.admin);
    const auto answer =
        node.call("POST", fmt::format("/__ursula/accept-loss/groups/{}", o.group));
    if (!answer) return node.failed(o.admin.json);
    if (o.admin.json) {
        print_json(*answer);
        return exit_ok;
    }
    fmt::print("group {}: new history {}; each stream's token before the loss and the tail it "
               "kept:\n",
               o.group, answer->value("history_id", std::string()));
    for (const auto& s : (*answer)["streams"]) {
        fmt::print("  {}  token before {}, tail kept {}, token now {}\n",
                   s.value("stream", std::string()), s.value("before", std::string("-")),
                   s.value("tail", 0ull), s.value("incarnation", std::string("-")));
    }
    return exit_ok;
}

template <typename Options>
std::shared_ptr<Options> add(CLI::App& parent, std::vector<command>& out, const char* name,
                             const char* help, const char* example, int (*run)(const Options&)) {
    auto options = std::make_shared<Options>();
    CLI::App* cmd = parent.add_subcommand(name, help)->group("Operator");
    cmd->footer(std::string("Example: ") + example +
                "\nExit codes: 0 done; 1 refused or failed (why is printed); 2 bad arguments; 3 "
                "no answer.");
    out.push_back({cmd, [options, run] { return run(*options); }});
    return options;
}

}  // namespace

void add_backup_commands(CLI::App& app, std::vector<command>& out) {
    CLI::App* backup = app.add_subcommand("backup", "Backups of a node's streams (docs/operations.md)")
                           ->group("Operator")
                           ->require_subcommand(1);
    {
        auto o = add<create_options>(
            *backup, out, "create",
            "Back up every stream of the node (every group at one applied index, from its "
            "leader) to LOCATION, a directory or s3://BUCKET/PREFIX that holds no backup yet; "
            "writes keep flowing. Prints the backup id",
            "dstream backup create http://127.0.0.1:4438 --to /var/backups/dstream/2026-07-18",
            run_create);
        CLI::App* cmd = backup->get_subcommand("create");
        add_admin_options(*cmd, o->admin);
        cmd->add_option("--to", o->to, "Where the backup goes: a directory or s3://BUCKET/PREFIX")
            ->required();
    }
    {
        auto o = add<verify_options>(
            *backup, out, "verify",
            "Check that the backup at LOCATION is whole: its manifest, and every file against "
            "the manifest's size and BLAKE3 digest; exits 0 only then",
            "dstream backup verify /var/backups/dstream/2026-07-18", run_verify);
        CLI::App* cmd = backup->get_subcommand("verify");
        cmd->add_option("LOCATION", o->location, "A directory or s3://BUCKET/PREFIX")->required();
        cmd->add_option("--s3-endpoint", o->s3_endpoint,
                        "The S3 server's URL for an s3:// location (empty: AWS)")
            ->envname("DSTREAM_S3_ENDPOINT");
        cmd->add_option("--s3-region", o->s3_region, "The region of an s3:// location")
            ->envname("DSTREAM_S3_REGION");
        cmd->add_flag("--json", o->json, "Print the outcome as one JSON object on stdout");
    }
    {
        auto o = add<restore_options>(
            app, out, "restore",
            "Rewind every stream of the node to its state in the backup at LOCATION, as one "
            "history rewrite per group: new tokens, streams created since removed, producer "
            "epochs closed. Safe to repeat",
            "dstream restore http://127.0.0.1:4438 --from /var/backups/dstream/2026-07-18",
            run_restore);
        CLI::App* cmd = app.get_subcommand("restore");
        add_admin_options(*cmd, o->admin);
        cmd->add_option("--from", o->from, "The backup: a directory or s3://BUCKET/PREFIX")
            ->required();
    }
    {
        auto o = add<loss_options>(
            app, out, "accept-loss",
            "Start a new history for group G from what it holds, after it lost acknowledged "
            "writes; prints each stream's token before the loss and the tail it kept",
            "dstream accept-loss http://127.0.0.1:4438 --group 3", run_accept_loss);
        CLI::App* cmd = app.get_subcommand("accept-loss");
        add_admin_options(*cmd, o->admin);
        cmd->add_option("--group", o->group, "The group")->required();
    }
}

}  // namespace dstream::cli::client
