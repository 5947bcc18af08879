// append: C keep-alive connections, each with exactly one POST in flight,
// round-robin over N streams (connection k: streams k, k+C, ...; when N < C,
// stream k % N), body of B bytes; optionally as idempotent producers (one
// producer per (connection, stream) pair, epoch 0, seq 0, 1, 2, ...).
//
// Non-2xx answers and transport failures are counted and reported, never
// retried: after a failure the connection moves on to its next request (a
// closed connection is reopened and counted), and gives up after 10
// consecutive transport failures.
#include <array>
#include <cstdio>
#include <iostream>
#include <memory>

#include "report.h"
#include "scenario.h"

namespace dstream::bench {
namespace {

struct append_options : common_options {
    unsigned streams = 500;
    unsigned connections = 64;
    std::size_t body_bytes = 1024;
    bool producer = false;
};

constexpr unsigned kMaxConsecutiveFailures = 10;
constexpr std::size_t kMaxErrorSamples = 5;

// Counters of one generator thread (only that thread writes them).
struct alignas(64) thread_stats {
    histogram latency;                   // measured window, 2xx only
    std::uint64_t ok = 0;                // 2xx in the window
    std::uint64_t errors = 0;            // non-2xx in the window
    std::uint64_t transport_errors = 0;  // connect/write/read failures in the window
    std::uint64_t ok_total = 0, errors_total = 0, transport_total = 0;  // whole run incl. warm-up
    std::array<std::uint64_t, 600> status{};                            // whole run, by status code
    std::vector<std::string> samples;  // first failures, for the report
    unsigned gave_up = 0;              // connections stopped after repeated transport failures
};

struct conn_state {
    std::unique_ptr<http_connection> conn;
    thread_stats* stats = nullptr;
    std::vector<std::uint32_t> streams;  // stream indexes this connection cycles over
    std::vector<std::uint64_t> seq;      // next Producer-Seq per entry of `streams`
    std::size_t next = 0;                // position in `streams`
    unsigned consecutive_failures = 0;
    unsigned index = 0;
};

class append_driver final : public exchange_handler {
public:
    append_driver(const append_options& o, const target& t, worker_pool& pool,
                  const std::string& run_id, const std::vector<std::string>& paths)
        : opt_(o), run_id_(run_id), body_(make_body(o.body_bytes, o.content_type)) {
        for (unsigned i = 0; i < pool.size(); ++i)
            stats_.push_back(std::make_unique<thread_stats>());
        // Everything but the producer fields and the blank line, per stream.
        for (const auto& p : paths) {
            std::string& h = prefixes_.emplace_back();
            start_head(h, "POST", p, t);
            add_field(h, "Content-Type", o.content_type);
            add_field(h, "Content-Length", std::uint64_t{body_.size()});
        }

        for (unsigned k = 0; k < o.connections; ++k) {
            auto st = std::make_unique<conn_state>();
            st->index = k;
            st->conn = std::make_unique<http_connection>(pool.ioc(k), t, *this);
            st->conn->tag = k;
            st->stats = stats_[k % pool.size()].get();
            if (o.streams >= o.connections) {
                for (std::uint32_t s = k; s < o.streams; s += o.connections)
                    st->streams.push_back(s);
            } else {
                st->streams.push_back(k % o.streams);
            }
            st->seq.assign(st->streams.size(), 0);
            st->conn->head().reserve(prefixes_.front().size() + 160);
            conns_.push_back(std::move(st));
        }
    }

    void start(worker_pool& pool) {
        for (auto& st : conns_) {
            conn_state* s = st.get();
            asio::post(pool.ioc(s->index), [this, s] { issue(*s); });
        }
    }

    void abort(worker_pool& pool, unsigned thread) {
        for (std::size_t k = thread; k < conns_.size(); k += pool.size()) conns_[k]->conn->close();
    }

    run_phase& phase() { return phase_; }
    const std::string& body() const { return body_; }

    void on_response(http_connection& c, const response& r) override {
        conn_state& st = *conns_[c.tag];
        thread_stats& ts = *st.stats;
        const bool in_window = phase_.measuring();
        if (r.ec) {
            ++ts.transport_total;
            if (in_window) ++ts.transport_errors;
            if (ts.samples.size() < kMaxErrorSamples) {
                ts.samples.push_back("connection " + std::to_string(st.index) + ": " +
                                     r.ec.message());
            }
            if (++st.consecutive_failures >= kMaxConsecutiveFailures) {
                ++ts.gave_up;
                return;
            }
        } else {
            st.consecutive_failures = 0;
            if (r.status > 0 && r.status < static_cast<int>(ts.status.size()))
                ++ts.status[r.status];
            if (r.ok()) {
                ++ts.ok_total;
                if (in_window) {
                    ++ts.ok;
                    ts.latency.record(r.latency_ns());
                }
            } else {
                ++ts.errors_total;
                if (in_window) ++ts.errors;
                if (ts.samples.size() < kMaxErrorSamples) {
                    ts.samples.push_back("POST " + std::string(path_of(st)) + " -> " +
                                         std::to_string(r.status) + " " + std::string(r.body));
                }
            }
        }
        // Advance even after a failure: no silent retries.
        if (++st.next == st.streams.size()) st.next = 0;
        if (phase_.stopping()) {
            c.close();
            return;
        }
        issue(st);
    }

    // Merged over threads.
    thread_stats totals() const {
        thread_stats t;
        for (const auto& s : stats_) {
            t.latency.merge(s->latency);
            t.ok += s->ok;
            t.errors += s->errors;
            t.transport_errors += s->transport_errors;
            t.ok_total += s->ok_total;
            t.errors_total += s->errors_total;
            t.transport_total += s->transport_total;
            for (std::size_t i = 0; i < t.status.size(); ++i) t.status[i] += s->status[i];
            for (const auto& m : s->samples) {
                if (t.samples.size() < kMaxErrorSamples) t.samples.push_back(m);
            }
            t.gave_up += s->gave_up;
        }
        return t;
    }

    std::uint64_t reconnects() const {
        std::uint64_t n = 0;
        for (const auto& st : conns_) n += st->conn->connects() > 0 ? st->conn->connects() - 1 : 0;
        return n;
    }

private:
    std::string_view path_of(const conn_state& st) const {
        std::string_view p = prefixes_[st.streams[st.next]];
        p.remove_prefix(5);  // "POST "
        return p.substr(0, p.find(' '));
    }

    void issue(conn_state& st) {
        const std::uint32_t stream = st.streams[st.next];
        std::string& h = st.conn->head();
        h.assign(prefixes_[stream]);
        if (opt_.producer) {
            h += "Producer-Id: bench-";
            h += run_id_;
            h += "-c";
            append_number(h, st.index);
            h += "-s";
            append_number(h, stream);
            h += "\r\nProducer-Epoch: 0\r\nProducer-Seq: ";
            append_number(h, st.seq[st.next]++);
            h += "\r\n";
        }
        end_head(h);
        st.conn->send(body_);
    }

    const append_options& opt_;
    const std::string& run_id_;
    const std::string body_;
    std::vector<std::string> prefixes_;
    std::vector<std::unique_ptr<thread_stats>> stats_;
    std::vector<std::unique_ptr<conn_state>> conns_;
    run_phase phase_;
};

int run_append(const append_options& o) {
    if (o.streams == 0 || o.connections == 0) {
        std::cerr << "dstream-bench: --streams and --connections must be positive\n";
        return 2;
    }
    worker_pool pool(o.threads);
    run_streams rs;
    if (const int rc = create_run_streams(o, pool, o.streams, o.connections, rs); rc != 0)
        return rc;
    const double setup_s = rs.setup_s;

    append_driver driver(o, rs.where, pool, rs.run_id, rs.paths);
    driver.start(pool);
    const window_result w =
        run_measured(pool, driver.phase(), o.window(), [&](unsigned i) { driver.abort(pool, i); });

    const thread_stats s = driver.totals();
    const double secs = w.seconds > 0 ? w.seconds : 1;
    const double rate = static_cast<double>(s.ok) / secs;
    const double mb_s = rate * static_cast<double>(driver.body().size()) / 1e6;
    std::map<int, std::uint64_t> statuses;
    for (std::size_t i = 0; i < s.status.size(); ++i) {
        if (s.status[i]) statuses[static_cast<int>(i)] = s.status[i];
    }

    json_object j;
    j.add("scenario", "append")
        .add("streams", o.streams)
        .add("connections", o.connections)
        .add("body_bytes", static_cast<std::uint64_t>(driver.body().size()))
        .add("producer", o.producer)
        .add("setup_s", setup_s, 3)
        .add("warmup_s", o.warmup_s, 3)
        .add("window_s", w.seconds, 3)
        .add("appends", s.ok)
        .add("appends_per_s", rate, 1)
        .add("mb_per_s", mb_s, 2)
        .add_raw("latency_us", latency_json(s.latency))
        .add("errors", s.errors)
        .add("transport_errors", s.transport_errors)
        .add("errors_total", s.errors_total)
        .add("transport_errors_total", s.transport_total)
        .add("reconnects", driver.reconnects())
        .add("connections_gave_up", s.gave_up)
        .add_raw("status_counts", status_counts_json(statuses))
        .add("ended_early", w.ended_early)
        .add("drained", w.drained);
    add_run_fields(j, o, rs);
    const std::string cpu_text = add_cpu_and_server(j, w, s.ok, "append");
    const std::string samples_text = add_error_samples(j, s.samples);

    char buf[512];
    std::string text;
    std::snprintf(
        buf, sizeof buf,
        "append: %u connections over %u streams (%s surface), %zu-byte %s bodies, producer %s, %u "
        "thread%s\n",
        o.connections, o.streams, o.surface_name.c_str(), driver.body().size(),
        o.content_type.c_str(), o.producer ? "on" : "off", o.threads, o.threads == 1 ? "" : "s");
    text += buf;
    std::snprintf(buf, sizeof buf, "  window          %.2f s after %.2f s warm-up (setup %.2f s)\n",
                  w.seconds, o.warmup_s, setup_s);
    text += buf;
    std::snprintf(buf, sizeof buf, "  appends         %llu  (%.0f/s, %.2f MB/s of bodies)\n",
                  static_cast<unsigned long long>(s.ok), rate, mb_s);
    text += buf;
    text += "  latency         " + latency_text(s.latency) + "\n";
    std::string codes;
    for (const auto& [code, n] : statuses)
        codes += " " + std::to_string(code) + "x" + std::to_string(n);
    std::snprintf(
        buf, sizeof buf,
        "  errors          %llu non-2xx, %llu transport in the window; whole run:%s%s, %llu "
        "reconnects\n",
        static_cast<unsigned long long>(s.errors),
        static_cast<unsigned long long>(s.transport_errors),
        codes.empty() ? " no answers" : codes.c_str(),
        s.transport_total ? (" + " + std::to_string(s.transport_total) + " transport").c_str() : "",
        static_cast<unsigned long long>(driver.reconnects()));
    text += buf;
    text += cpu_text;
    text += samples_text;
    if (s.gave_up)
        text += "  WARNING: " + std::to_string(s.gave_up) +
                " connections gave up after repeated failures\n";
    if (w.ended_early) text += "  WARNING: every connection stopped before the window ended\n";
    if (!w.drained) text += "  WARNING: in-flight requests did not finish within the drain time\n";

    return emit(j, text, s.ok > 0 ? 0 : 1);
}

}  // namespace

void add_append_scenario(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<append_options>();
    CLI::App* sub =
        app.add_subcommand("append", "POST load: C connections, one append in flight each");
    add_common_options(*sub, *opts);
    add_window_options(*sub, *opts);
    sub->add_option("--streams", opts->streams, "streams to create and append to")
        ->capture_default_str()
        ->check(CLI::Range(1u, 10000000u));
    sub->add_option("--connections", opts->connections,
                    "keep-alive connections, one request in flight each")
        ->capture_default_str()
        ->check(CLI::Range(1u, 100000u));
    sub->add_option("--body-bytes", opts->body_bytes, "bytes per append body")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{64} << 20));
    sub->add_flag("--producer", opts->producer,
                  "send Producer-Id/Epoch/Seq (one producer per connection and stream)");
    sub->callback([opts, &exit_code] { exit_code = run_append(*opts); });
}

}  // namespace dstream::bench
