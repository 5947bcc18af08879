#pragma once
// SIGINT and SIGTERM, taken by one thread with sigwait: the first signal
// asks for a graceful stop, a second one exits at once. SIGHUP asks for a
// reload (the listeners' certificates) and never stops the node. A thread that waits
// for signals works whatever the io is doing (draining, stopped, or not
// started yet), where an Asio signal_set would need the io to run.
#include <csignal>
#include <functional>
#include <mutex>
#include <thread>

namespace dstream::cli {

class stop_signals {
public:
    // Blocks SIGINT, SIGTERM and SIGHUP in the calling thread, and so in every thread
    // it starts later: construct it before any other thread exists.
    stop_signals();
    ~stop_signals();
    stop_signals(const stop_signals&) = delete;
    stop_signals& operator=(const stop_signals&) = delete;

    // From now on the first signal calls `graceful` (on the signal thread).
    // Until then, and for any later signal, the process exits at once with
    // status 128 + the signal's number, as a shell reports death by signal.
    void on_first(std::function<void(int)> graceful);
    // From now on each SIGHUP calls `reload` (on the signal thread); until
    // then a SIGHUP is logged and ignored.
    void on_hangup(std::function<void()> reload);

private:
    void wait_loop();

    sigset_t _set{};
    std::mutex _mutex;
    std::function<void(int)> _graceful;
    std::function<void()> _reload;
    bool _signalled = false;
    bool _closing = false;
    std::thread _thread;
};

}  // namespace dstream::cli
