#include "cli/signals.h"

#include <pthread.h>
#include <unistd.h>

#include <spdlog/spdlog.h>

namespace dstream::cli {

stop_signals::stop_signals() {
    sigemptyset(&_set);
    sigaddset(&_set, SIGINT);
    sigaddset(&_set, SIGTERM);
    sigaddset(&_set, SIGHUP);
    pthread_sigmask(SIG_BLOCK, &_set, nullptr);
    _thread = std::thread([this] { wait_loop(); });
}

stop_signals::~stop_signals() {
    {
        std::lock_guard lock(_mutex);
        _closing = true;
    }
    // Wakes the thread's sigwait; it sees _closing and returns.
    pthread_kill(_thread.native_handle(), SIGTERM);
    _thread.join();
}

void stop_signals::on_first(std::function<void(int)> graceful) {
    std::lock_guard lock(_mutex);
    _graceful = std::move(graceful);
}

void stop_signals::on_hangup(std::function<void()> reload) {
    std::lock_guard lock(_mutex);
    _reload = std::move(reload);
}

void stop_signals::wait_loop() {
    while (true) {
        int sig = 0;
        if (sigwait(&_set, &sig) != 0) continue;
        if (sig == SIGHUP) {
            std::function<void()> reload;
            {
                std::lock_guard lock(_mutex);
                if (_closing) return;
                reload = _reload;
            }
            if (reload) {
                reload();
            } else {
                spdlog::info("SIGHUP: nothing to reload");
            }
            continue;
        }
        std::function<void(int)> graceful;
        {
            std::lock_guard lock(_mutex);
            if (_closing) return;
            if (!_signalled && _graceful) graceful = _graceful;
            _signalled = true;
        }
        if (graceful) {
            graceful(sig);
            continue;
        }
        // Every acknowledged write is already durable: exiting now loses
        // nothing a client was told is stored, as after kill -9.
        spdlog::warn("dstream stop: signal={} exit=immediate status={}", sig, 128 + sig);
        spdlog::default_logger()->flush();
        ::_exit(128 + sig);
    }
}

}  // namespace dstream::cli
