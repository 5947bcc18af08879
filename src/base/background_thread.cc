#include "base/background_thread.h"

#include <cstring>
#include <pthread.h>
#include <sched.h>

namespace dstream {

void become_background_thread(const char* name) {
    char kept[16] = {};  // the kernel's limit, its terminating zero included
    std::strncpy(kept, name, sizeof kept - 1);
    pthread_setname_np(pthread_self(), kept);
    // On Linux, 0 is the calling thread, not the whole process.
    const sched_param no_priority{};  // batch threads have no static priority
    sched_setscheduler(0, SCHED_BATCH, &no_priority);
}

}  // namespace dstream
