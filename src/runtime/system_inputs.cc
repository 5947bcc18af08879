#include <random>

#include "runtime/clock.h"
#include "runtime/random.h"

namespace dstream::runtime {
namespace {

class machine_clock final : public clock {
public:
    protocol::unix_ms wall_ms() const override { return now_unix_ms(); }
    std::uint64_t monotonic_ms() const override {
        return static_cast<std::uint64_t>(std::chrono::duration_cast<std::chrono::milliseconds>(
                                              std::chrono::steady_clock::now().time_since_epoch())
                                              .count());
    }
};

class machine_random final : public random_source {
public:
    std::uint64_t next() override {
        thread_local std::mt19937_64 generator = [] {
            std::random_device device;
            return std::mt19937_64((std::uint64_t{device()} << 32) ^ device());
        }();
        return generator();
    }
};

}  // namespace

clock& system_clock() {
    static machine_clock instance;
    return instance;
}

random_source& system_random() {
    static machine_random instance;
    return instance;
}

}  // namespace dstream::runtime
