#pragma once
// Threads that work behind the I/O threads: the WAL's flushes and its next
// segment. Marked as batch work, such a thread woken while an I/O thread
// runs on its CPU waits for that thread to block or use up its slice instead
// of preempting it. A WAL thread woken by a finished flush then takes every
// record the I/O thread queued in the meantime, not the few queued before the
// disk answered: on one CPU (a pinned server, a one-core machine) under the
// append load, 14 records per flush became about 40, and a durable append
// cost about 12% less CPU at a lower median latency (docs/benchmarks.md). A
// thread woken beside an idle CPU runs at once, as before.

namespace dstream {

// Names the calling thread (`top -H`, `perf` and /proc show the name; at most
// 15 characters are kept) and marks it as batch work (SCHED_BATCH) when it
// runs under the default policy; a policy an operator chose for the server
// (`chrt`) stays. Either refused leaves the thread as it was: both only
// inform the scheduler and the operator.
void become_background_thread(const char* name);

}  // namespace dstream
