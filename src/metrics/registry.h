#pragma once
// The node's metrics: each module registers a collector for the metrics it
// owns, once, and every scrape renders all of them in registration order.
// Registration and rendering take a lock; updating a metric never does.
#include <functional>
#include <mutex>
#include <string>
#include <vector>

#include "metrics/exposition.h"

namespace dstream::metrics {

class registry {
public:
    using collector = std::function<void(exposition&)>;

    void add(collector collect);
    std::string render() const;

private:
    mutable std::mutex _mutex;
    std::vector<collector> _collectors;
};

// The registry /__ursula/metrics renders.
registry& node_registry();

// A module's metrics as one process-wide object, registered with the node
// registry when first used: `T` derives from registered<T> and has
// `void collect(exposition&) const`.
template <typename T>
class registered {
public:
    static T& get() {
        static T instance;
        return instance;
    }

protected:
    registered() {
        // Runs from T's construction; the collector is called only after it.
        node_registry().add([this](exposition& out) { static_cast<const T*>(this)->collect(out); });
    }
};

}  // namespace dstream::metrics
