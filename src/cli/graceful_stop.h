#pragma once
// The stop of a serving node after its first SIGTERM or SIGINT: the server
// drains (no new connections, live reads answered, idle connections closed,
// answers in flight finished), and the io stops once no connection is left
// or when the bound passes, whichever comes first. The WAL is flushed after.
#include <chrono>
#include <utility>

#include <boost/asio/io_context.hpp>
#include <boost/asio/steady_timer.hpp>
#include <boost/asio/strand.hpp>

#include "edge/server.h"
#include "metrics/stopwatch.h"
#include "runtime/io_threads.h"

namespace dstream::cli {

class graceful_stop {
public:
    // `admin`, the admin listener (null when off), stops accepting at once;
    // the stop waits for the client listener's connections only.
    graceful_stop(runtime::io_threads& threads, edge::server& server, edge::server* admin,
                  std::chrono::seconds bound);

    // Any thread, once.
    void begin(int signal);

    // Once the io stopped: whether work in flight was cut at the bound, and
    // how long the stop took so far.
    bool cut() const { return _cut; }
    std::uint64_t elapsed_ms() const { return _took.elapsed_us() / 1000; }

private:
    void finish(bool bound_reached);

    runtime::io_threads& _threads;
    edge::server& _server;
    edge::server* _admin;
    std::chrono::seconds _bound;
    boost::asio::strand<boost::asio::io_context::executor_type> _strand;
    boost::asio::steady_timer _timer;
    metrics::stopwatch _took;
    bool _finished = false;
    bool _cut = false;
};

}  // namespace dstream::cli
