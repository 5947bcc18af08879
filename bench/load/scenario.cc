#include "scenario.h"

#include <iostream>
#include <random>

#include "request_chain.h"

namespace dstream::bench {

void add_common_options(CLI::App& sub, common_options& o) {
    sub.add_option("--url", o.url, "server base URL, http://HOST:PORT")->required();
    sub.add_option("--threads", o.threads, "generator threads, one io_context each")
        ->capture_default_str()
        ->check(CLI::Range(1u, 64u));
    sub.add_option("--server-pid", o.server_pid,
                   "server process to sample (CPU from /proc/PID/stat, RSS from /proc/PID/status)");
    sub.add_option("--surface", o.surface_name,
                   "URL layout: bucket (/BUCKET/STREAM) or v1 (/v1/stream/ID)")
        ->capture_default_str()
        ->check(CLI::IsMember({"bucket", "v1"}));
    sub.add_option("--content-type", o.content_type, "stream content type")->capture_default_str();
}

void add_window_options(CLI::App& sub, common_options& o) {
    sub.add_option("--warmup", o.warmup_s, "seconds of load before the measured window")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 3600.0));
    sub.add_option("--duration", o.duration_s, "seconds in the measured window")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 3600.0));
}

window_options common_options::window() const {
    window_options w;
    w.warmup_s = warmup_s;
    w.duration_s = duration_s;
    w.server_pid = server_pid;
    return w;
}

bool resolve_target(const common_options& o, target& t) {
    std::string error;
    if (parse_target(o.url, t, error)) return true;
    std::cerr << "dstream-bench: " << error << "\n";
    return false;
}

std::string random_run_id() {
    static constexpr char alphabet[] = "abcdefghijklmnopqrstuvwxyz0123456789";
    std::random_device rd;
    std::mt19937_64 gen((static_cast<std::uint64_t>(rd()) << 32) ^ rd() ^
                        static_cast<std::uint64_t>(bench_clock::now().time_since_epoch().count()));
    std::uniform_int_distribution<int> pick(0, sizeof(alphabet) - 2);
    std::string id;
    for (int i = 0; i < 8; ++i) id.push_back(alphabet[pick(gen)]);
    return id;
}

std::string stream_path(const target& t, surface s, const std::string& run_id, std::size_t index) {
    if (s == surface::v1)
        return t.base_path + "/v1/stream/bench-" + run_id + "-s" + std::to_string(index);
    return t.base_path + "/bench-" + run_id + "/s" + std::to_string(index);
}

bool is_json_type(std::string_view content_type) {
    return content_type.starts_with("application/json");
}

std::string make_body(std::size_t bytes, const std::string& content_type) {
    std::string body;
    body.reserve(bytes);
    const bool json = is_json_type(content_type);
    if (json && bytes >= 2) body.push_back('"');
    static constexpr char filler[] =
        "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
    for (std::size_t i = 0; body.size() < (json && bytes >= 2 ? bytes - 1 : bytes); ++i) {
        body.push_back(filler[i % (sizeof(filler) - 1)]);
    }
    if (json && bytes >= 2) body.push_back('"');
    return body;
}

namespace {

// One PUT per path.
class create_chain final : public request_chain {
public:
    create_chain(const target& t, const std::vector<std::string>& paths,
                 const std::string& content_type)
        : target_(t), paths_(paths), content_type_(content_type) {}

    bool next(std::size_t item, unsigned step, const response*, std::string& head,
              std::string_view& body) override {
        if (step > 0) return false;
        start_head(head, "PUT", paths_[item], target_);
        add_field(head, "Content-Type", content_type_);
        add_field(head, "Content-Length", std::uint64_t{0});
        end_head(head);
        body = {};
        return true;
    }

private:
    const target& target_;
    const std::vector<std::string>& paths_;
    const std::string& content_type_;
};

}  // namespace

bool create_streams(worker_pool& pool, const target& t, const std::vector<std::string>& paths,
                    unsigned connections, const std::string& content_type, std::string& error) {
    create_chain chain(t, paths, content_type);
    return run_chains(pool, t, paths.size(), connections, chain, std::chrono::seconds(120), error);
}

void add_run_fields(json_object& j, const common_options& o, const run_streams& rs) {
    j.add("url", o.url)
        .add("surface", o.surface_name)
        .add("threads", o.threads)
        .add("content_type", o.content_type)
        .add("run_id", rs.run_id);
}

int create_run_streams(const common_options& o, worker_pool& pool, std::size_t count,
                       unsigned connections, run_streams& out) {
    if (!resolve_target(o, out.where)) return 2;
    out.run_id = random_run_id();
    out.paths.clear();
    for (std::size_t i = 0; i < count; ++i) {
        out.paths.push_back(stream_path(out.where, o.where(), out.run_id, i));
    }
    std::string error;
    const auto start = bench_clock::now();
    if (!create_streams(pool, out.where, out.paths, connections, o.content_type, error)) {
        std::cerr << "dstream-bench: setup failed: " << error << "\n";
        return 1;
    }
    out.setup_s = std::chrono::duration<double>(bench_clock::now() - start).count();
    return 0;
}

}  // namespace dstream::bench
