// catchup: one stream filled to S bytes with a checkable pattern (pattern.h)
// by large appends, one after another; then R readers released together
// each read it whole from offset -1, following Stream-Next-Offset until
// Stream-Up-To-Date (base protocol 5.6), checking every byte as it arrives.
// --repeat reads it again that many times in all, the readers released
// together for each round. --settle-seconds waits between the fill and the
// reads: time for a durable server to move the stream to its cold tier. Reports MB/s over all readers and per reader,
// time to first byte, and the latency of each read request.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iostream>
#include <memory>
#include <thread>

#include "pattern.h"
#include "request_chain.h"
#include "round_driver.h"
#include "scenario.h"

namespace dstream::bench {
namespace {

struct catchup_options : common_options {
    std::uint64_t stream_bytes = std::uint64_t{256} << 20;
    std::size_t append_bytes = std::size_t{4} << 20;
    unsigned readers = 4;
    unsigned repeat = 1;
    double settle_seconds = 0;
};

// The pattern appended in order, append_bytes at a time.
class fill_chain final : public request_chain {
public:
    fill_chain(const target& t, const std::string& path, const catchup_options& o)
        : target_(t), path_(path), opt_(o) {}

    bool next(std::size_t, unsigned step, const response*, std::string& head,
              std::string_view& body) override {
        const std::uint64_t pos = std::uint64_t{step} * opt_.append_bytes;
        if (pos >= opt_.stream_bytes) return false;
        const auto n = static_cast<std::size_t>(
            std::min<std::uint64_t>(opt_.append_bytes, opt_.stream_bytes - pos));
        stream_pattern::get().fill(body_, pos, n);
        start_head(head, "POST", path_, target_);
        add_field(head, "Content-Type", opt_.content_type);
        add_field(head, "Content-Length", std::uint64_t{n});
        end_head(head);
        body = body_;
        return true;
    }

private:
    const target& target_;
    const std::string& path_;
    const catchup_options& opt_;
    std::string body_;
};

// One reader's read of the whole stream.
struct reader_round {
    double seconds = 0;
    double ttfb_ns = NAN;  // NaN when no byte came
    bool complete = false;
};

struct reader {
    pattern_verifier verifier;
    bench_clock::time_point start;
    std::vector<reader_round> rounds;
};

class catchup_driver final : public round_driver {
public:
    catchup_driver(worker_pool& pool, const target& t, const std::string& path,
                   const catchup_options& o)
        : round_driver(pool, t, o.readers, o.repeat), target_(t), path_(path), opt_(o) {
        for (std::size_t k = 0; k < o.readers; ++k) {
            auto r = std::make_unique<reader>();
            r->rounds.reserve(o.repeat);
            conn(k).capture_fields = {"Stream-Next-Offset", "Stream-Up-To-Date"};
            conn(k).sink = &r->verifier;
            readers_.push_back(std::move(r));
        }
    }

    const std::vector<std::unique_ptr<reader>>& readers() const { return readers_; }

private:
    void start_round(std::size_t k, unsigned) override {
        reader& r = *readers_[k];
        r.verifier.reset();
        r.start = bench_clock::now();
        read(k, "-1");
    }

    void read(std::size_t k, std::string_view offset) {
        std::string& h = conn(k).head();
        h.clear();
        begin_request_line(h, "GET", path_);
        h += "?offset=";
        append_query_value(h, offset);
        end_request_line(h, target_);
        end_head(h);
        conn(k).send({});
    }

    void on_answer(std::size_t k, const response& r) override {
        reader& rd = *readers_[k];
        if (!record(k, r, "reader")) {
            end_round(rd, false);
            return;
        }
        const std::string& next = (*r.fields)[0];
        const bool up_to_date = (*r.fields)[1] == "true";
        if (up_to_date || next.empty() || r.body_bytes == 0) {
            // Anything but the whole stream, exactly, is a short (or long) read.
            end_round(rd, up_to_date && rd.verifier.position() == opt_.stream_bytes);
            return;
        }
        read(k, next);
    }

    void end_round(reader& rd, bool complete) {
        reader_round out;
        const auto now = bench_clock::now();
        out.seconds = std::chrono::duration<double>(now - rd.start).count();
        if (rd.verifier.got_bytes()) {
            out.ttfb_ns =
                std::chrono::duration<double, std::nano>(rd.verifier.first_byte() - rd.start)
                    .count();
        }
        out.complete = complete;
        rd.rounds.push_back(out);
        finish_round();
    }

    const target& target_;
    const std::string& path_;
    const catchup_options& opt_;
    std::vector<std::unique_ptr<reader>> readers_;
};

std::string mb_per_s_list(const std::vector<double>& v) {
    std::string out = "[";
    char buf[32];
    for (std::size_t i = 0; i < v.size(); ++i) {
        std::snprintf(buf, sizeof buf, "%s%.1f", i ? "," : "", v[i]);
        out += buf;
    }
    return out + "]";
}

int run_catchup(const catchup_options& o) {
    if (is_json_type(o.content_type)) {
        std::cerr << "dstream-bench: catchup compares raw bytes: use a non-JSON --content-type\n";
        return 2;
    }
    worker_pool pool(o.threads);
    run_streams rs;
    if (const int rc = create_run_streams(o, pool, 1, 1, rs); rc != 0) return rc;
    const std::string& path = rs.paths.front();
    fill_chain fill(rs.where, path, o);
    std::string error;
    const auto fill_start = bench_clock::now();
    if (!run_chains(pool, rs.where, 1, 1, fill, std::chrono::seconds(1800), error)) {
        std::cerr << "dstream-bench: filling the stream failed: " << error << "\n";
        return 1;
    }
    const double fill_s = std::chrono::duration<double>(bench_clock::now() - fill_start).count();
    std::this_thread::sleep_for(std::chrono::duration<double>(o.settle_seconds));

    catchup_driver driver(pool, rs.where, path, o);
    window_result w;
    if (!driver.run(o.server_pid, std::chrono::seconds(1800), w)) return 1;

    const request_stats req = driver.totals();
    histogram ttfb;
    std::vector<double> reader_rates;
    std::uint64_t incomplete = 0, mismatches = 0, first_mismatch = 0;
    for (const auto& rd : driver.readers()) {
        for (const auto& r : rd->rounds) {
            if (!std::isnan(r.ttfb_ns)) ttfb.record(static_cast<std::uint64_t>(r.ttfb_ns));
            if (!r.complete) ++incomplete;
            if (r.complete && r.seconds > 0) {
                reader_rates.push_back(static_cast<double>(o.stream_bytes) / 1e6 / r.seconds);
            }
        }
        if (rd->verifier.mismatches() > 0 && mismatches == 0) {
            first_mismatch = rd->verifier.first_mismatch_at();
        }
        mismatches += rd->verifier.mismatches();
    }
    std::sort(reader_rates.begin(), reader_rates.end());
    const auto rate_at = [&](double q) {
        return reader_rates.empty() ? NAN
                                    : reader_rates[static_cast<std::size_t>(
                                          q * static_cast<double>(reader_rates.size() - 1))];
    };
    std::vector<double> round_rates;
    for (const double s : driver.round_seconds()) {
        round_rates.push_back(static_cast<double>(o.stream_bytes) * o.readers / 1e6 / s);
    }
    const double total_s = driver.total_seconds();
    const double aggregate = total_s > 0 ? static_cast<double>(req.body_bytes) / 1e6 / total_s : 0;

    json_object j;
    j.add("scenario", "catchup")
        .add("stream_bytes", o.stream_bytes)
        .add("append_bytes", static_cast<std::uint64_t>(o.append_bytes))
        .add("readers", o.readers)
        .add("repeat", o.repeat)
        .add("fill_s", fill_s, 3)
        .add("fill_mb_per_s", static_cast<double>(o.stream_bytes) / 1e6 / fill_s, 1)
        .add("settle_s", o.settle_seconds, 1)
        .add("seconds", total_s, 3)
        .add("bytes_read", req.body_bytes)
        .add("aggregate_mb_per_s", aggregate, 1)
        .add_raw("round_mb_per_s", mb_per_s_list(round_rates))
        .add_raw("reader_mb_per_s", json_object()
                                        .add("min", rate_at(0), 1)
                                        .add("median", rate_at(0.5), 1)
                                        .add("max", rate_at(1), 1)
                                        .str())
        .add_raw("ttfb_us", latency_json(ttfb))
        .add("requests", req.requests)
        .add_raw("latency_us", latency_json(req.latency))
        .add("mismatches", mismatches)
        .add("incomplete_reads", incomplete)
        .add("errors", req.errors.count);
    if (mismatches > 0) j.add("first_mismatch_at", first_mismatch);
    const std::string samples_text = add_error_samples(j, req.errors.samples);
    add_run_fields(j, o, rs);
    const std::string cpu_text = add_cpu_and_server(j, w, req.body_bytes / 1000000, "mb");

    char buf[1024];
    std::snprintf(
        buf, sizeof buf,
        "catchup: %u readers of one %.1f MiB %s stream (%s surface), %u round%s\n"
        "  fill            %.2f s (%.1f MB/s in %zu-byte appends)\n"
        "  read            %.1f MB/s over all readers (%.2f s), per reader %.1f / %.1f / %.1f "
        "MB/s (min / median / max)\n"
        "  first byte      %s\n"
        "  requests        %llu, %s\n"
        "  verified        %llu bytes, %llu mismatching pieces, %llu incomplete reads, %llu "
        "errors\n",
        o.readers, static_cast<double>(o.stream_bytes) / 1048576.0, o.content_type.c_str(),
        o.surface_name.c_str(), o.repeat, o.repeat == 1 ? "" : "s", fill_s,
        static_cast<double>(o.stream_bytes) / 1e6 / fill_s, o.append_bytes, aggregate, total_s,
        rate_at(0), rate_at(0.5), rate_at(1), latency_text(ttfb).c_str(),
        static_cast<unsigned long long>(req.requests), latency_text(req.latency).c_str(),
        static_cast<unsigned long long>(req.body_bytes),
        static_cast<unsigned long long>(mismatches), static_cast<unsigned long long>(incomplete),
        static_cast<unsigned long long>(req.errors.count));
    return emit(j, buf + cpu_text + samples_text, mismatches == 0 && incomplete == 0 ? 0 : 1);
}

}  // namespace

void add_catchup_scenario(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<catchup_options>();
    CLI::App* sub = app.add_subcommand(
        "catchup", "catch-up reads: R readers read one S-byte stream from -1, every byte checked");
    add_common_options(*sub, *opts);
    sub->add_option("--stream-bytes", opts->stream_bytes, "bytes in the stream")
        ->capture_default_str()
        ->check(CLI::Range(std::uint64_t{1}, std::uint64_t{1} << 40));
    sub->add_option("--append-bytes", opts->append_bytes, "bytes per append while filling it")
        ->capture_default_str()
        ->check(CLI::Range(std::size_t{1}, std::size_t{1} << 30));
    sub->add_option("--readers", opts->readers, "concurrent readers, one connection each")
        ->capture_default_str()
        ->check(CLI::Range(1u, 100000u));
    sub->add_option("--repeat", opts->repeat, "rounds: times each reader reads the stream")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000u));
    sub->add_option("--settle-seconds", opts->settle_seconds,
                    "seconds between the fill and the reads (the server moves bytes to its cold tier)")
        ->capture_default_str()
        ->check(CLI::Range(0.0, 3600.0));
    sub->callback([opts, &exit_code] { exit_code = run_catchup(*opts); });
}

}  // namespace dstream::bench
