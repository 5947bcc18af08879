#pragma once
// The --verbose trace: one line per event worth reading, stamped with the
// virtual time.
#include <cstdio>
#include <string_view>

#include <fmt/format.h>

#include "event_queue.h"

namespace dstream::sim {

class tracer {
public:
    tracer(const event_queue& events, bool on) : _events(events), _on(on) {}
    bool on() const { return _on; }
    template <typename... Args>
    void operator()(fmt::format_string<Args...> format, Args&&... args) const {
        if (!_on) return;
        const std::string line = fmt::format(format, std::forward<Args>(args)...);
        std::printf("[%8llu] %s\n", static_cast<unsigned long long>(_events.now()), line.c_str());
    }

private:
    const event_queue& _events;
    bool _on;
};

}  // namespace dstream::sim
