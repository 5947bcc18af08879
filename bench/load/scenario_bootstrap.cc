// bootstrap (dstream only: the reference server has no snapshots): N
// streams, each with one message, a snapshot published at the offset after
// it (PUT {stream}/snapshot/{offset}, extensions 2.2) and T more messages
// after the snapshot; then N clients released together each
// GET {stream}/bootstrap (extensions 3: multipart/mixed, the snapshot and
// the messages after it) and read the answer whole. --repeat does that
// several rounds. Reports the latency of each bootstrap and MB/s.
#include <cstdio>
#include <iostream>
#include <memory>

#include "pattern.h"
#include "request_chain.h"
#include "round_driver.h"
#include "scenario.h"

namespace dstream::bench {
namespace {

struct bootstrap_options : common_options {
    unsigned streams = 100;
    std::size_t snapshot_bytes = std::size_t{1} << 20;
    unsigned tail_messages = 100;
    std::size_t body_bytes = 256;
    unsigned repeat = 1;
};

// Per stream: a message, the snapshot at the offset it answered, the tail.
class bootstrap_setup final : public request_chain {
public:
    bootstrap_setup(const target& t, const std::vector<std::string>& paths,
                    const bootstrap_options& o)
        : target_(t), paths_(paths), opt_(o), message_(make_body(o.body_bytes, o.content_type)) {
        stream_pattern::get().fill(snapshot_, 0, o.snapshot_bytes);
    }

    std::vector<std::string> capture_fields() const override { return {"Stream-Next-Offset"}; }

    bool next(std::size_t item, unsigned step, const response* previous, std::string& head,
              std::string_view& body) override {
        if (step == 1) {
            begin_request_line(head, "PUT", paths_[item]);
            head += "/snapshot/";
            append_query_value(head, (*previous->fields)[0]);
            end_request_line(head, target_);
            add_field(head, "Content-Type", "application/octet-stream");
            add_field(head, "Content-Length", std::uint64_t{snapshot_.size()});
            end_head(head);
            body = snapshot_;
            return true;
        }
        if (step > opt_.tail_messages + 1) return false;
        start_head(head, "POST", paths_[item], target_);
        add_field(head, "Content-Type", opt_.content_type);
        add_field(head, "Content-Length", std::uint64_t{message_.size()});
        end_head(head);
        body = message_;
        return true;
    }

private:
    const target& target_;
    const std::vector<std::string>& paths_;
    const bootstrap_options& opt_;
    const std::string message_;
    std::string snapshot_;
};

class bootstrap_driver final : public round_driver {
public:
    bootstrap_driver(worker_pool& pool, const run_streams& rs, const bootstrap_options& o)
        : round_driver(pool, rs.where, rs.paths.size(), o.repeat),
          rs_(rs),
          opt_(o),
          malformed_(rs.paths.size(), 0) {
        for (std::size_t k = 0; k < rs.paths.size(); ++k) {
            conn(k).capture_fields = {"Content-Type"};
        }
    }

    std::uint64_t malformed() const {
        std::uint64_t n = 0;
        for (const auto m : malformed_) n += m;
        return n;
    }

private:
    void start_round(std::size_t k, unsigned) override {
        std::string& h = conn(k).head();
        h.clear();
        begin_request_line(h, "GET", rs_.paths[k]);
        h += "/bootstrap";
        end_request_line(h, rs_.where);
        end_head(h);
        conn(k).send({});
    }

    void on_answer(std::size_t k, const response& r) override {
        if (record(k, r, "client") && (!(*r.fields)[0].starts_with("multipart/mixed") ||
                                       r.body_bytes < opt_.snapshot_bytes)) {
            ++malformed_[k];
        }
        finish_round();
    }

    const run_streams& rs_;
    const bootstrap_options& opt_;
    std::vector<std::uint64_t> malformed_;  // element k written on client k's thread only
};

int run_bootstrap(const bootstrap_options& o) {
    worker_pool pool(o.threads);
    run_streams rs;
    if (const int rc = create_run_streams(o, pool, o.streams, 64, rs); rc != 0) return rc;
    bootstrap_setup setup(rs.where, rs.paths, o);
    std::string error;
    const auto setup_start = bench_clock::now();
    if (!run_chains(pool, rs.where, rs.paths.size(), 64, setup, std::chrono::seconds(1800),
                    error)) {
        std::cerr << "dstream-bench: publishing the snapshots failed: " << error << "\n";
        return 1;
    }
    const double setup_s =
        rs.setup_s + std::chrono::duration<double>(bench_clock::now() - setup_start).count();

    bootstrap_driver driver(pool, rs, o);
    window_result w;
    if (!driver.run(o.server_pid, std::chrono::seconds(1800), w)) return 1;

    const request_stats req = driver.totals();
    const double total_s = driver.total_seconds();
    const double secs = total_s > 0 ? total_s : 1;
    const std::uint64_t ok = req.latency.count();
    const double mb_s = static_cast<double>(req.body_bytes) / 1e6 / secs;

    json_object j;
    j.add("scenario", "bootstrap")
        .add("streams", o.streams)
        .add("snapshot_bytes", static_cast<std::uint64_t>(o.snapshot_bytes))
        .add("tail_messages", o.tail_messages)
        .add("body_bytes", static_cast<std::uint64_t>(o.body_bytes))
        .add("repeat", o.repeat)
        .add("setup_s", setup_s, 3)
        .add("seconds", total_s, 3)
        .add("bootstraps", ok)
        .add("bootstraps_per_s", static_cast<double>(ok) / secs, 1)
        .add("bytes_read", req.body_bytes)
        .add("mb_per_s", mb_s, 1)
        .add_raw("latency_us", latency_json(req.latency))
        .add("malformed", driver.malformed())
        .add("errors", req.errors.count);
    const std::string samples_text = add_error_samples(j, req.errors.samples);
    add_run_fields(j, o, rs);
    const std::string cpu_text = add_cpu_and_server(j, w, ok, "bootstrap");

    char buf[768];
    std::snprintf(buf, sizeof buf,
                  "bootstrap: %u clients, one %s stream each (%s surface): %zu-byte snapshot + "
                  "%u messages of %zu bytes, %u round%s\n"
                  "  set-up          %.2f s\n"
                  "  bootstraps      %llu in %.2f s (%.1f/s, %.1f MB/s), %llu malformed, %llu "
                  "errors\n"
                  "  latency         %s\n",
                  o.streams, o.content_type.c_str(), o.surface_name.c_str(), o.snapshot_bytes,
                  o.tail_messages, o.body_bytes, o.repeat, o.repeat == 1 ? "" : "s", setup_s,
                  static_cast<unsigned long long>(ok), total_s, static_cast<double>(ok) / secs,
                  mb_s, static_cast<unsigned long long>(driver.malformed()),
                  static_cast<unsigned long long>(req.errors.count),
                  latency_text(req.latency).c_str());
    return emit(j, buf + cpu_text + samples_text,
                ok > 0 && driver.malformed() == 0 && req.errors.count == 0 ? 0 : 1);
}

}  // namespace

void add_bootstrap_scenario(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<bootstrap_options>();
    CLI::App* sub = app.add_subcommand(
        "bootstrap",
        "snapshot + tail in one multipart answer: N clients GET {stream}/bootstrap together "
        "(dstream only: the reference server has no snapshots or bootstrap)");
    add_common_options(*sub, *opts);
    sub->add_option("--streams", opts->streams, "streams, one bootstrapping client each")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000000u));
    sub->add_option("--snapshot-bytes", opts->snapshot_bytes, "bytes per snapshot")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
    sub->add_option("--tail-messages", opts->tail_messages, "messages appended after the snapshot")
        ->capture_default_str()
        ->check(CLI::Range(0u, 1000000u));
    sub->add_option("--body-bytes", opts->body_bytes, "bytes per message")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{16} << 20));
    sub->add_option("--repeat", opts->repeat, "rounds: times each client bootstraps")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000u));
    sub->callback([opts, &exit_code] { exit_code = run_bootstrap(*opts); });
}

}  // namespace dstream::bench
