#include "proc_stats.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>
#include <unistd.h>
#include <vector>

#include <sys/resource.h>

namespace dstream::bench {

double self_cpu_seconds() {
    rusage ru{};
    if (getrusage(RUSAGE_SELF, &ru) != 0) return 0;
    const auto secs = [](const timeval& tv) {
        return static_cast<double>(tv.tv_sec) + tv.tv_usec / 1e6;
    };
    return secs(ru.ru_utime) + secs(ru.ru_stime);
}

namespace {

// One process's own figures.
process_sample sample_one(int pid) {
    process_sample s;
    const std::string base = "/proc/" + std::to_string(pid);
    {
        std::ifstream in(base + "/stat");
        std::string line;
        if (!in || !std::getline(in, line)) {
            s.error = "cannot read " + base + "/stat";
            return s;
        }
        // Field 2 (comm) is in parentheses and may hold spaces: parse after the last ')'.
        const auto close = line.rfind(')');
        if (close == std::string::npos) {
            s.error = "unexpected format of " + base + "/stat";
            return s;
        }
        std::istringstream fields(line.substr(close + 1));
        // Fields from 3 on: state(3) ppid pgrp session tty_nr tpgid flags minflt cminflt majflt
        // cmajflt utime(14) stime(15)
        std::string skip;
        for (int i = 3; i <= 13; ++i) fields >> skip;
        unsigned long long utime = 0, stime = 0;
        if (!(fields >> utime >> stime)) {
            s.error = "unexpected format of " + base + "/stat";
            return s;
        }
        const long ticks = sysconf(_SC_CLK_TCK);
        s.cpu_seconds =
            static_cast<double>(utime + stime) / static_cast<double>(ticks > 0 ? ticks : 100);
    }
    {
        std::ifstream in(base + "/status");
        std::string line;
        while (std::getline(in, line)) {
            const auto value = [&] {
                return std::strtoull(line.c_str() + line.find(':') + 1, nullptr, 10);
            };
            if (line.rfind("VmRSS:", 0) == 0) s.rss_kib = value();
            if (line.rfind("VmHWM:", 0) == 0) s.hwm_kib = value();
        }
    }
    s.ok = true;
    return s;
}

// The processes `pid` started that still run, as every one of its threads lists them.
std::vector<int> children_of(int pid) {
    std::vector<int> out;
    std::error_code ec;
    for (const auto& task :
         std::filesystem::directory_iterator("/proc/" + std::to_string(pid) + "/task", ec)) {
        std::ifstream in(task.path() / "children");
        int child = 0;
        while (in >> child) out.push_back(child);
    }
    return out;
}

}  // namespace

process_sample sample_process(int pid) {
    process_sample s = sample_one(pid);
    if (!s.ok) return s;
    for (const int child : children_of(pid)) {
        const process_sample c = sample_one(child);
        if (!c.ok) continue;  // it exited between the listing and the read
        s.cpu_seconds += c.cpu_seconds;
        s.rss_kib += c.rss_kib;
        s.hwm_kib += c.hwm_kib;
    }
    return s;
}

}  // namespace dstream::bench
