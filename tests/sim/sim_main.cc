// dstream-sim: the simulation tier (tests/sim/README.md).
//
//   dstream-sim --seed S [--verbose] [--trace-messages]   one seed, in this process
//   dstream-sim --seeds N [--seed-base B] [--jobs J]      seeds B..B+N-1
//
// Each seed of a range runs in a child process of its own, so that one that
// aborts (an assertion of libraft) or hangs (killed after --seed-timeout
// seconds) counts as failed and the others go on. The last line is
// "N passed, M failed"; each failed seed prints the command that replays it.
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <string>

#include "world.h"

namespace {

using dstream::sim::run_result;
using dstream::sim::world;

struct arguments {
    std::uint64_t seed = 0;
    bool single = false;
    std::uint64_t seeds = 100;
    std::uint64_t base = 1;
    unsigned jobs = 1;
    unsigned seed_timeout = 120;
    bool verbose = false;
    bool trace_messages = false;
};

[[noreturn]] void usage(const char* argv0) {
    std::fprintf(stderr,
                 "usage: %s --seed S [--verbose] [--trace-messages]\n"
                 "       %s --seeds N [--seed-base B] [--jobs J] [--seed-timeout SECONDS]\n",
                 argv0, argv0);
    std::exit(2);
}

arguments parse(int argc, char** argv) {
    arguments a;
    for (int i = 1; i < argc; ++i) {
        const std::string arg = argv[i];
        const auto value = [&]() -> std::uint64_t {
            if (i + 1 >= argc) usage(argv[0]);
            return std::strtoull(argv[++i], nullptr, 10);
        };
        if (arg == "--seed") {
            a.seed = value();
            a.single = true;
        } else if (arg == "--seeds") {
            a.seeds = value();
        } else if (arg == "--seed-base") {
            a.base = value();
        } else if (arg == "--jobs") {
            a.jobs = static_cast<unsigned>(std::max<std::uint64_t>(1, value()));
        } else if (arg == "--seed-timeout") {
            a.seed_timeout = static_cast<unsigned>(value());
        } else if (arg == "--verbose") {
            a.verbose = true;
        } else if (arg == "--trace-messages") {
            a.verbose = a.trace_messages = true;
        } else {
            usage(argv[0]);
        }
    }
    return a;
}

run_result run_seed(std::uint64_t seed, bool verbose, bool trace_messages) {
    world w(seed, verbose, trace_messages);
    return w.run();
}

int run_single(const arguments& a) {
    const auto started = std::chrono::steady_clock::now();
    const run_result r = run_seed(a.seed, a.verbose, a.trace_messages);
    const auto ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                        std::chrono::steady_clock::now() - started)
                        .count();
    if (r.ok) {
        std::printf("seed %llu: ok (%llu virtual ms, %llu messages (%llu dropped, %llu past a full "
                    "queue, %llu lost in %llu broken connections), %llu writes acknowledged, "
                    "%llu crashes, %llu restarts, %llu failed writes, %llu leaders, "
                    "%llu checkpoints, %llu snapshots installed, %llu states compared; %lld ms)\n",
                    static_cast<unsigned long long>(a.seed),
                    static_cast<unsigned long long>(r.virtual_ms),
                    static_cast<unsigned long long>(r.messages),
                    static_cast<unsigned long long>(r.net.dropped),
                    static_cast<unsigned long long>(r.net.queue_full),
                    static_cast<unsigned long long>(r.net.lost),
                    static_cast<unsigned long long>(r.net.breaks),
                    static_cast<unsigned long long>(r.acknowledged),
                    static_cast<unsigned long long>(r.crashes),
                    static_cast<unsigned long long>(r.counted.restarts),
                    static_cast<unsigned long long>(r.counted.failed_writes),
                    static_cast<unsigned long long>(r.leaders),
                    static_cast<unsigned long long>(r.counted.checkpoints),
                    static_cast<unsigned long long>(r.counted.installs),
                    static_cast<unsigned long long>(r.states_compared),
                    static_cast<long long>(ms));
        return 0;
    }
    std::printf("seed %llu: FAIL %s\n", static_cast<unsigned long long>(a.seed),
                r.failure.c_str());
    return 1;
}

struct child {
    std::uint64_t seed = 0;
    int out = -1;  // the child's one-line verdict
};

int run_range(const arguments& a, const char* argv0) {
    std::map<pid_t, child> running;
    std::uint64_t next = a.base;
    const std::uint64_t end = a.base + a.seeds;
    std::uint64_t passed = 0, failed = 0;
    std::fflush(stdout);
    while (next < end || !running.empty()) {
        while (next < end && running.size() < a.jobs) {
            int fds[2];
            if (pipe(fds) != 0) {
                std::perror("pipe");
                return 2;
            }
            const pid_t pid = fork();
            if (pid < 0) {
                std::perror("fork");
                return 2;
            }
            if (pid == 0) {
                close(fds[0]);
                alarm(a.seed_timeout);
                const run_result r = run_seed(next, false, false);
                const std::string verdict = r.ok ? "ok" : r.failure;
                if (write(fds[1], verdict.data(), verdict.size()) < 0) _exit(3);
                _exit(r.ok ? 0 : 1);
            }
            close(fds[1]);
            running[pid] = child{next, fds[0]};
            ++next;
        }
        int status = 0;
        const pid_t pid = wait(&status);
        if (pid < 0) break;
        const auto it = running.find(pid);
        if (it == running.end()) continue;
        std::string verdict;
        char buf[4096];
        ssize_t n = 0;
        while ((n = read(it->second.out, buf, sizeof buf)) > 0) verdict.append(buf, n);
        close(it->second.out);
        const std::uint64_t seed = it->second.seed;
        running.erase(it);
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
            ++passed;
            continue;
        }
        ++failed;
        if (WIFSIGNALED(status)) {
            const int sig = WTERMSIG(status);
            verdict = sig == SIGALRM ? "timed out" : std::string("killed by ") + strsignal(sig);
        }
        std::printf("seed %llu: FAIL %s\n  replay: %s --seed %llu --verbose\n",
                    static_cast<unsigned long long>(seed), verdict.c_str(), argv0,
                    static_cast<unsigned long long>(seed));
        std::fflush(stdout);
    }
    std::printf("%llu passed, %llu failed\n", static_cast<unsigned long long>(passed),
                static_cast<unsigned long long>(failed));
    return failed == 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
    const arguments a = parse(argc, argv);
    return a.single ? run_single(a) : run_range(a, argv[0]);
}
