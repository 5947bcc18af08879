#include "metrics/registry.h"

namespace dstream::metrics {

void registry::add(collector collect) {
    std::lock_guard lock(_mutex);
    _collectors.push_back(std::move(collect));
}

std::string registry::render() const {
    exposition out;
    std::lock_guard lock(_mutex);
    for (const auto& collect : _collectors) collect(out);
    return out.text();
}

registry& node_registry() {
    static registry instance;
    return instance;
}

}  // namespace dstream::metrics
