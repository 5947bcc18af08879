#include "scenario.h"

#include <atomic>
#include <mutex>
#include <random>

namespace dstream::bench {

void add_common_options(CLI::App& sub, common_options& o) {
    sub.add_option("--url", o.url, "server base URL, http://HOST:PORT")->required();
    sub.add_option("--threads", o.threads, "generator threads, one io_context each")
        ->capture_default_str()
        ->check(CLI::Range(1u, 64u));
    sub.add_option("--warmup", o.warmup_s, "seconds of load before the measured window")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 3600.0));
    sub.add_option("--duration", o.duration_s, "seconds in the measured window")
        ->capture_default_str()
        ->check(CLI::Range(0.1, 3600.0));
    sub.add_option("--server-pid", o.server_pid,
                   "server process to sample (CPU from /proc/PID/stat, RSS from /proc/PID/status)");
    sub.add_option("--surface", o.surface_name,
                   "URL layout: bucket (/BUCKET/STREAM) or v1 (/v1/stream/ID)")
        ->capture_default_str()
        ->check(CLI::IsMember({"bucket", "v1"}));
    sub.add_option("--content-type", o.content_type, "stream content type")->capture_default_str();
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

std::string make_body(std::size_t bytes, const std::string& content_type) {
    std::string body;
    body.reserve(bytes);
    const bool json = content_type.rfind("application/json", 0) == 0;
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

class stream_creator final : public exchange_handler {
public:
    stream_creator(worker_pool& pool, const target& t, const std::vector<std::string>& paths,
                   unsigned connections, const std::string& content_type)
        : paths_(paths), content_type_(content_type), target_(t) {
        connections =
            std::max(1u, std::min<unsigned>(connections, static_cast<unsigned>(paths.size())));
        for (unsigned k = 0; k < connections; ++k) {
            auto c = std::make_unique<http_connection>(pool.ioc(k), t, *this);
            c->tag = k;
            conns_.push_back(std::move(c));
            next_.push_back(k);
        }
    }

    void start(worker_pool& pool) {
        for (unsigned k = 0; k < conns_.size(); ++k) {
            asio::post(pool.ioc(k), [this, k] { issue(*conns_[k]); });
        }
    }

    void abort(worker_pool& pool, unsigned i) {
        for (std::size_t k = i; k < conns_.size(); k += pool.size()) conns_[k]->close();
    }

    void on_response(http_connection& c, const response& r) override {
        const std::size_t idx = next_[c.tag];
        if (!r.ok()) {
            std::lock_guard lock(mu_);
            ++failures_;
            if (messages_.size() < 5) {
                messages_ +=
                    "\n  PUT " + paths_[idx] + ": " +
                    (r.ec ? r.ec.message() : std::to_string(r.status) + " " + std::string(r.body));
            }
            if (r.ec) return;  // give up on this connection
        }
        next_[c.tag] = idx + conns_.size();
        issue(c);
    }

    std::uint64_t failures() const { return failures_; }
    const std::string& messages() const { return messages_; }

private:
    void issue(http_connection& c) {
        const std::size_t idx = next_[c.tag];
        if (idx >= paths_.size()) {
            c.close();
            return;
        }
        auto& h = c.head();
        h.clear();
        h += "PUT ";
        h += paths_[idx];
        h += " HTTP/1.1\r\nHost: ";
        h += target_.host_header;
        h += "\r\nContent-Type: ";
        h += content_type_;
        h += "\r\nContent-Length: 0\r\n\r\n";
        c.send({});
    }

    const std::vector<std::string>& paths_;
    const std::string& content_type_;
    const target& target_;
    std::vector<std::unique_ptr<http_connection>> conns_;
    std::vector<std::size_t> next_;
    std::mutex mu_;
    std::atomic<std::uint64_t> failures_{0};
    std::string messages_;
};

}  // namespace

bool create_streams(worker_pool& pool, const target& t, const std::vector<std::string>& paths,
                    unsigned connections, const std::string& content_type, std::string& error) {
    if (paths.empty()) return true;
    stream_creator creator(pool, t, paths, connections, content_type);
    creator.start(pool);
    const bool in_time = pool.run_to_completion(std::chrono::seconds(120),
                                                [&](unsigned i) { creator.abort(pool, i); });
    if (!in_time) {
        error = "creating " + std::to_string(paths.size()) + " streams took more than 120 s";
        return false;
    }
    if (creator.failures() > 0) {
        error =
            std::to_string(creator.failures()) + " stream creations failed:" + creator.messages();
        return false;
    }
    return true;
}

}  // namespace dstream::bench
