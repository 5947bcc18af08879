#include "base/background_thread.h"

#include <cstring>
#include <pthread.h>
#include <sched.h>

namespace dstream {

void become_background_thread(const char* name) {
    char kept[16] = {};  // the kernel's limit, its terminating zero included
    std::strncpy(kept, name, sizeof kept - 1);
    pthread_setname_np(pthread_self(), kept);
    // On Linux, 0 is the calling thread, not the whole process. A policy
    // other than the default is an operator's (`chrt` on the server) and kept.
    if (sched_getscheduler(0) != SCHED_OTHER) return;
    const sched_param no_priority{};  // batch threads have no static priority
    sched_setscheduler(0, SCHED_BATCH, &no_priority);
}

}  // namespace dstream
