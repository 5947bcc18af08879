// longpoll: N streams, each with one long-poll reader
// (GET {stream}?offset=X&live=long-poll&cursor=C, following Stream-Next-Offset
// and Stream-Cursor, base protocol 5.7) and a writer appending stamped
// messages at R per second to every stream. Reports the write-to-read
// latency of every message and the acknowledged messages a reader missed.
//
// A reader first asks for the tail (GET ?offset=now, which answers at once)
// and counts as ready with it, so no message can slip in before it polls;
// the writer starts when every reader is ready. Servers end an idle poll
// with 204 after their timeout (dstream 1 s by default, the reference
// 30 s); the reader polls again from the offset the answer names.
#include <array>
#include <cstdio>
#include <memory>

#include "delivery_driver.h"

namespace dstream::bench {
namespace {

struct longpoll_options : common_options {
    unsigned streams = 100;
    stamped_write_options write;

    longpoll_options() {
        content_type = "text/plain";
        write.rate = 10;
    }
};

constexpr unsigned kMaxConsecutiveFailures = 10;

struct poller final : body_sink {
    poller(asio::io_context& ioc, const target& t, exchange_handler& h, const paced_writer& w,
           std::size_t stream, reader_counters& c)
        : conn(ioc, t, h), log(w, stream, c) {
        next_offset.reserve(64);
        cursor.reserve(64);
        conn.capture_fields = {"Stream-Next-Offset", "Stream-Cursor"};
        conn.sink = this;
    }

    void on_body(std::string_view piece) override { log.feed(piece); }

    http_connection conn;
    delivery_log log;
    std::string next_offset;  // "" until the first answer
    std::string cursor;
    unsigned failures = 0;
};

// Answers counted per generator thread.
struct alignas(64) poll_counts {
    std::uint64_t with_data = 0;
    std::uint64_t empty = 0;  // 204 after the server's timeout, or 200 without a body
};

class longpoll_driver final : public delivery_driver, private exchange_handler {
public:
    longpoll_driver(worker_pool& pool, const run_streams& rs, const longpoll_options& o)
        : delivery_driver(pool, rs, o, o.write, rs.paths.size()),
          paths_(rs.paths),
          target_(rs.where),
          counts_(pool.size()) {
        exchange_handler& handler = *this;
        for (std::size_t k = 0; k < paths_.size(); ++k) {
            auto p = std::make_unique<poller>(pool.ioc(k), target_, handler, writer_, k,
                                              counters_for(k));
            p->conn.tag = k;
            pollers_.push_back(std::move(p));
        }
    }

    poll_counts polls() const {
        poll_counts total;
        for (const auto& c : counts_) {
            total.with_data += c.with_data;
            total.empty += c.empty;
        }
        return total;
    }

private:
    void start_reader(std::size_t k) override { poll(k); }
    void close_reader(std::size_t k) override { pollers_[k]->conn.close(); }
    const delivery_log& log_of(std::size_t k) const override { return pollers_[k]->log; }

    // The tail first (a plain read of offset=now), then long polls from it.
    void poll(std::size_t k) {
        poller& p = *pollers_[k];
        std::string& h = p.conn.head();
        h.clear();
        begin_request_line(h, "GET", paths_[k]);
        if (p.next_offset.empty()) {
            h += "?offset=now";
        } else {
            h += "?offset=";
            append_query_value(h, p.next_offset);
            h += "&live=long-poll";
            if (!p.cursor.empty()) {
                h += "&cursor=";
                append_query_value(h, p.cursor);
            }
        }
        end_request_line(h, target_);
        end_head(h);
        p.conn.send({});
    }

    void on_response(http_connection& c, const response& r) override {
        const std::size_t k = c.tag;
        if (done(k)) return;
        poller& p = *pollers_[k];
        const std::string& next = (*r.fields)[0];
        if (!r.ok() || next.empty()) {
            counters_for(k).read_errors.note(
                "reader " + std::to_string(k) + ": " +
                (r.ok() ? std::string("answer without Stream-Next-Offset") : describe_failure(r)));
            if (++p.failures >= kMaxConsecutiveFailures) {
                give_up(k);
                return;
            }
            poll(k);
            return;
        }
        p.failures = 0;
        if (p.next_offset.empty()) {
            reader_ready();
        } else {
            poll_counts& n = counts_[k % counts_.size()];
            ++(r.body_bytes > 0 ? n.with_data : n.empty);
        }
        p.next_offset.assign(next);
        p.cursor.assign((*r.fields)[1]);
        check_complete(k);
        if (!done(k)) poll(k);
    }

    const std::vector<std::string>& paths_;
    const target& target_;
    std::vector<poll_counts> counts_;
    std::vector<std::unique_ptr<poller>> pollers_;
};

int run_longpoll(const longpoll_options& o) {
    worker_pool pool(o.threads);
    run_streams rs;
    if (const int rc = create_run_streams(o, pool, o.streams, 64, rs); rc != 0) return rc;
    longpoll_driver driver(pool, rs, o);
    window_result w;
    if (!driver.run(w)) return 1;

    const poll_counts polls = driver.polls();
    json_object j;
    j.add("scenario", "longpoll")
        .add("streams", o.streams)
        .add("polls_with_data", polls.with_data)
        .add("polls_empty", polls.empty);
    char buf[320];
    std::snprintf(buf, sizeof buf,
                  "longpoll: %u %s streams (%s surface), one long-poll reader each, %.2f "
                  "messages/s per stream of %zu bytes\n"
                  "  polls           %llu answered with data, %llu empty\n",
                  o.streams, o.content_type.c_str(), o.surface_name.c_str(), o.write.rate,
                  o.write.body_bytes, static_cast<unsigned long long>(polls.with_data),
                  static_cast<unsigned long long>(polls.empty));
    return driver.report(j, w, buf);
}

}  // namespace

void add_longpoll_scenario(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<longpoll_options>();
    CLI::App* sub = app.add_subcommand(
        "longpoll",
        "long-poll delivery: N streams, one reader each, a writer at R messages/s each");
    add_common_options(*sub, *opts);
    add_window_options(*sub, *opts);
    sub->add_option("--streams", opts->streams, "streams, one long-poll reader each")
        ->capture_default_str()
        ->check(CLI::Range(1u, 1000000u));
    add_stamped_write_options(*sub, opts->write, "messages per second to each stream");
    sub->callback([opts, &exit_code] { exit_code = run_longpoll(*opts); });
}

}  // namespace dstream::bench
