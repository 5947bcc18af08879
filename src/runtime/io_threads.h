#pragma once
// The I/O threads of a node, each with an io_context of its own that no
// other thread runs. A strand made on one of them runs its handlers on that
// thread alone: a group is owned by one thread and never migrates; a
// connection is served by one thread at a time (edge/server.h moves a plain
// one between requests to the thread of the group it writes to). A hand-off
// between two strands of one thread goes through the thread's private queue,
// with no lock on a shared queue and no wake-up of another thread; one to
// another thread wakes it only when it is idle (Asio's scheduler interrupts
// the reactor of an idle thread, not of a busy one). One io_context shared
// by every thread instead woke the idle thread at nearly every post (a futex
// call per request).
#include <cstddef>
#include <memory>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace dstream::runtime {

// Which io_contexts work is spread over, without owning them: a node's
// io_threads, or the one io_context of a test.
class io_contexts {
public:
    // One io_context, whatever runs it.
    io_contexts(boost::asio::io_context& only) : _all{&only} {}  // NOLINT: one is a set of one
    explicit io_contexts(std::vector<boost::asio::io_context*> all) : _all(std::move(all)) {}

    std::size_t size() const { return _all.size(); }
    // The owner of item `i` (a group's index, a connection's number).
    boost::asio::io_context& of(std::size_t i) const { return *_all[i % _all.size()]; }
    // The one that runs node-wide work (the acceptor, the peer network).
    boost::asio::io_context& first() const { return *_all.front(); }

private:
    std::vector<boost::asio::io_context*> _all;
};

class io_threads {
public:
    explicit io_threads(std::size_t count);
    ~io_threads();
    io_threads(const io_threads&) = delete;
    io_threads& operator=(const io_threads&) = delete;

    const io_contexts& contexts() const { return _view; }
    // Runs the first io_context on the calling thread and every other one on
    // a thread of its own; returns once stop() was called. Each is kept
    // running meanwhile even with nothing to do: a connection may come to it
    // at any time.
    void run();
    // Any thread: every io_context stops.
    void stop();

private:
    using work_guard = boost::asio::executor_work_guard<boost::asio::io_context::executor_type>;

    std::vector<std::unique_ptr<boost::asio::io_context>> _contexts;
    std::vector<work_guard> _busy;
    io_contexts _view;
};

}  // namespace dstream::runtime
