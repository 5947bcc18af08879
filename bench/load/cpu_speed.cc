#include "cpu_speed.h"

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <iostream>
#include <memory>
#include <pthread.h>
#include <sched.h>
#include <string>
#include <time.h>
#include <vector>

#include "report.h"

namespace dstream::bench {
namespace {

struct cpu_speed_options {
    unsigned repeat = 3;
    std::uint64_t steps = 4'000'000;
};

double thread_cpu_ns() {
    timespec t{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return static_cast<double>(t.tv_sec) * 1e9 + static_cast<double>(t.tv_nsec);
}

// Two kinds of a server's work, timed apart: dependent loads through a table
// larger than L1 and smaller than L2 (bound by latency), and short
// store-and-add steps through one variable in memory (bound by throughput,
// which a busy sibling hyperthread on the host takes from).
std::uint64_t chase(std::vector<std::uint32_t>& table, std::uint64_t steps) {
    std::uint64_t acc = 0x9e3779b97f4a7c15ull;
    std::uint32_t at = 0;
    const auto mask = static_cast<std::uint32_t>(table.size() - 1);
    for (std::uint64_t i = 0; i < steps; ++i) {
        at = (table[at] + static_cast<std::uint32_t>(acc)) & mask;
        acc = acc * 6364136223846793005ull + at;
        table[at] ^= static_cast<std::uint32_t>(acc >> 32);
    }
    return acc;
}

std::uint64_t store_and_add(std::uint64_t steps) {
    volatile std::uint64_t x = 0;
    for (std::uint64_t i = 0; i < steps; ++i) x = x + i * 7;
    return x;
}

struct cpu_time {
    int cpu = 0;
    double chase_ns = 0;  // per step, the fastest of the repeats
    double store_ns = 0;
};

// CPU time per step of `work`, the fastest of `repeat` runs: an
// interruption only ever slows one down.
template <class Work>
double fastest_ns_per_step(unsigned repeat, std::uint64_t steps, Work work) {
    double best = 0;
    for (unsigned r = 0; r < repeat; ++r) {
        const double start = thread_cpu_ns();
        work();
        const double ns = (thread_cpu_ns() - start) / static_cast<double>(steps);
        if (r == 0 || ns < best) best = ns;
    }
    return best;
}

std::string three_decimals(double x) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.3f", x);
    return buf;
}

int run_cpu_speed(const cpu_speed_options& o) {
    cpu_set_t allowed;
    CPU_ZERO(&allowed);
    if (sched_getaffinity(0, sizeof allowed, &allowed) != 0) {
        std::cerr << "cpu-speed: cannot read the CPUs this process may use\n";
        return 1;
    }
    std::vector<std::uint32_t> table(64 * 1024);  // 256 KiB
    for (std::size_t i = 0; i < table.size(); ++i) {
        table[i] = static_cast<std::uint32_t>(i * 2654435761u);
    }
    std::uint64_t sink = 0;
    std::vector<cpu_time> cpus;
    for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
        if (!CPU_ISSET(cpu, &allowed)) continue;
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(cpu, &one);
        if (pthread_setaffinity_np(pthread_self(), sizeof one, &one) != 0) continue;
        cpu_time t{cpu};
        t.chase_ns = fastest_ns_per_step(o.repeat, o.steps, [&] { sink += chase(table, o.steps); });
        const std::uint64_t store_steps = o.steps * 8;
        t.store_ns =
            fastest_ns_per_step(o.repeat, store_steps, [&] { sink += store_and_add(store_steps); });
        cpus.push_back(t);
    }
    pthread_setaffinity_np(pthread_self(), sizeof allowed, &allowed);
    if (cpus.empty()) {
        std::cerr << "cpu-speed: could not run on any CPU\n";
        return 1;
    }
    const auto spread = [&](double cpu_time::*field) {
        const auto [lo, hi] =
            std::minmax_element(cpus.begin(), cpus.end(),
                                [&](const auto& a, const auto& b) { return a.*field < b.*field; });
        return (*hi).*field / (*lo).*field;
    };
    std::string list = "[";
    std::string text = "cpu-speed, ns per step (each CPU's fastest of " + std::to_string(o.repeat) +
                       "), chase / store-and-add:";
    for (std::size_t i = 0; i < cpus.size(); ++i) {
        json_object one;
        one.add("cpu", cpus[i].cpu)
            .add("chase_ns_per_step", cpus[i].chase_ns)
            .add("store_ns_per_step", cpus[i].store_ns);
        list += (i ? "," : "") + one.str();
        text += " cpu" + std::to_string(cpus[i].cpu) + " " + three_decimals(cpus[i].chase_ns) +
                " / " + three_decimals(cpus[i].store_ns);
    }
    list += "]";
    const double chase_spread = spread(&cpu_time::chase_ns);
    const double store_spread = spread(&cpu_time::store_ns);
    json_object j;
    j.add("scenario", "cpu_speed")
        .add_raw("cpus", list)
        .add("chase_slowest_over_fastest", chase_spread)
        .add("store_slowest_over_fastest", store_spread)
        .add("check", sink & 1);
    std::cout << j.str() << "\n";
    std::cerr << text << "; slowest / fastest " << three_decimals(chase_spread) << " / "
              << three_decimals(store_spread) << "\n";
    return 0;
}

}  // namespace

void add_cpu_speed_command(CLI::App& app, int& exit_code) {
    auto opts = std::make_shared<cpu_speed_options>();
    CLI::App* sub = app.add_subcommand(
        "cpu-speed", "time one fixed piece of work on each CPU in turn (no server involved)");
    sub->add_option("--repeat", opts->repeat, "runs per CPU; the fastest counts")
        ->capture_default_str()
        ->check(CLI::Range(1u, 100u));
    sub->add_option("--steps", opts->steps, "steps of work per run")
        ->capture_default_str()
        ->check(CLI::Range(std::uint64_t{1000}, std::uint64_t{1} << 34));
    sub->callback([opts, &exit_code] { exit_code = run_cpu_speed(*opts); });
}

}  // namespace dstream::bench
