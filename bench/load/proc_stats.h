// CPU time and memory of this process and of another one (the server under
// test, with the processes it started: an nginx master's workers), read from
// getrusage(2) and /proc.
#pragma once

#include <cstdint>
#include <string>

namespace dstream::bench {

// User + system CPU seconds used so far by this process (all threads).
double self_cpu_seconds();

struct process_sample {
    bool ok = false;            // false when /proc/PID could not be read (process gone?)
    double cpu_seconds = 0;     // utime + stime from /proc/PID/stat, all threads
    std::uint64_t rss_kib = 0;  // VmRSS from /proc/PID/status
    std::uint64_t hwm_kib = 0;  // VmHWM (peak RSS) from /proc/PID/status
    std::string error;
};

// PID and its child processes that run when sampled, summed: a child that
// exits takes its CPU time out of the sum.
process_sample sample_process(int pid);

}  // namespace dstream::bench
