// fanout: one stream, M subscribers reading it live over SSE
// (GET {stream}?offset=now&live=sse), one writer appending stamped messages
// at R per second. Reports the delivery latency of every (subscriber,
// message) pair and, per subscriber, acknowledged messages that never came
// and messages that came twice.
//
// A subscriber counts as connected once the answer's head has arrived (the
// server has then fixed `now`); the writer starts when all are. When the
// server ends an SSE response (dstream does after a while, so that CDNs can
// collapse readers) the subscriber reconnects from the last control event's
// streamNextOffset, as base protocol 5.8 asks.
#include <cstdio>
#include <iostream>
#include <memory>

#include "delivery_driver.h"
#include "sse_client.h"

namespace dstream::bench {
namespace {

struct fanout_options : common_options {
    unsigned subscribers = 100;
    stamped_write_options write;

    fanout_options() { content_type = "text/plain"; }
};

constexpr unsigned kMaxConsecutiveFailures = 10;

struct subscriber {
    subscriber(asio::io_context& ioc, const target& t, sse_handler& h, const paced_writer& w,
               reader_counters& c)
        : conn(ioc, t, h), log(w, 0, c) {
        next_offset.reserve(64);
    }

    sse_connection conn;
    delivery_log log;
    std::string next_offset;  // from the last control event; "" before the first
    bool opened = false;
    unsigned failures = 0;
};

class fanout_driver final : public delivery_driver, private sse_handler {
public:
    fanout_driver(worker_pool& pool, const run_streams& rs, const fanout_options& o)
        : delivery_driver(pool, rs, o, o.write, o.subscribers),
          path_(rs.paths.front()),
          target_(rs.where) {
        for (std::size_t k = 0; k < o.subscribers; ++k) {
            sse_handler& handler = *this;
            auto s = std::make_unique<subscriber>(pool.ioc(k), target_, handler, writer_,
                                                  counters_for(k));
            s->conn.tag = k;
            subs_.push_back(std::move(s));
        }
    }

    std::uint64_t connections_opened() const {
        std::uint64_t n = 0;
        for (const auto& s : subs_) n += s->conn.connects();
        return n;
    }

private:
    void start_reader(std::size_t k) override { open(*subs_[k]); }
    void close_reader(std::size_t k) override { subs_[k]->conn.close(); }
    const delivery_log& log_of(std::size_t k) const override { return subs_[k]->log; }

    void open(subscriber& s) {
        std::string& h = s.conn.head();
        h.clear();
        begin_request_line(h, "GET", path_);
        h += "?offset=";
        if (s.next_offset.empty()) {
            h += "now";
        } else {
            append_query_value(h, s.next_offset);
        }
        h += "&live=sse";
        end_request_line(h, target_);
        add_field(h, "Accept", "text/event-stream");
        end_head(h);
        s.conn.open();
    }

    void on_sse_open(sse_connection& c, int status, bool base64) override {
        subscriber& s = *subs_[c.tag];
        if (status != 200) return;  // reported when the answer ends
        if (base64) {
            counters_for(c.tag).read_errors.note(
                "the server sends this stream's SSE data in base64: use a text/* or "
                "application/json --content-type");
            give_up(c.tag);
            return;
        }
        if (!s.opened) {
            s.opened = true;
            reader_ready();
        }
    }

    void on_sse_data(sse_connection& c, std::string_view piece) override {
        subs_[c.tag]->log.feed(piece);
    }

    void on_sse_event(sse_connection& c, sse_event_kind kind, std::string_view text) override {
        subscriber& s = *subs_[c.tag];
        if (kind == sse_event_kind::control) {
            const std::string_view next = json_string_member(text, "streamNextOffset");
            if (!next.empty()) s.next_offset.assign(next);
            s.failures = 0;
            if (json_true_member(text, "streamClosed")) {
                // Nothing more will come, and a client must not reconnect.
                counters_for(c.tag).read_errors.note("the stream was closed");
                give_up(c.tag);
                return;
            }
        } else if (kind == sse_event_kind::other) {
            counters_for(c.tag).read_errors.note("SSE event: " + std::string(text));
        }
        check_complete(c.tag);
    }

    void on_sse_end(sse_connection& c, const error_code& ec, int status,
                    std::string_view body) override {
        const std::size_t k = c.tag;
        if (done(k)) return;
        subscriber& s = *subs_[k];
        if (ec || status != 200) {
            counters_for(k).read_errors.note("subscriber " + std::to_string(k) + ": " +
                                             describe_failure(ec, status, body));
        }
        // An answer that ends without a control event counts as a failure
        // too: a server that keeps doing that would have us loop.
        if (++s.failures >= kMaxConsecutiveFailures) {
            give_up(k);
            return;
        }
        ++counters_for(k).reconnects;
        open(s);
    }

    const std::string path_;
    const target& target_;
    std::vector<std::unique_ptr<subscriber>> subs_;
};

bool is_sse_text(std::string_view content_type) {
    return content_type.starts_with("text/") || is_json_type(content_type);
}

int run_fanout(const fanout_options& o) {
    if (!is_sse_text(o.content_type)) {
        std::cerr << "dstream-bench: fanout needs a text/* or application/json stream (SSE sends "
                     "other types in base64)\n";
        return 2;
    }
    worker_pool pool(o.threads);
    run_streams rs;
    if (const int rc = create_run_streams(o, pool, 1, 1, rs); rc != 0) return rc;
    fanout_driver driver(pool, rs, o);
    window_result w;
    if (!driver.run(w)) return 1;

    json_object j;
    j.add("scenario", "fanout")
        .add("subscribers", o.subscribers)
        .add("connections_opened", driver.connections_opened());
    char buf[256];
    std::snprintf(buf, sizeof buf,
                  "fanout: %u SSE subscribers on one %s stream (%s surface), %.1f messages/s of "
                  "%zu bytes\n",
                  o.subscribers, o.content_type.c_str(), o.surface_name.c_str(), o.write.rate,
                  o.write.body_bytes);
    return driver.report(j, w, buf);
}

}  // namespace

void add_fanout_scenario(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<fanout_options>();
    CLI::App* sub = app.add_subcommand(
        "fanout", "SSE delivery: M subscribers of one stream, one writer at R messages/s");
    add_common_options(*sub, *opts);
    add_window_options(*sub, *opts);
    sub->add_option("--subscribers", opts->subscribers,
                    "SSE subscribers (one connection each); 0 measures the writer alone")
        ->capture_default_str()
        ->check(CLI::Range(0u, 1000000u));
    add_stamped_write_options(*sub, opts->write, "messages per second to the stream");
    sub->callback([opts, &exit_code] { exit_code = run_fanout(*opts); });
}

}  // namespace dstream::bench
