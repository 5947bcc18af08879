#include "edge/admission.h"

namespace dstream::edge {

admission::ticket::~ticket() {
    if (_owner != nullptr) _owner->release(*this);
}

std::optional<admission::ticket> admission::admit_body(std::uint64_t bytes) {
    if (bytes == 0) return ticket(nullptr, std::string(), 0);
    std::uint64_t held = _body_bytes.load(std::memory_order_relaxed);
    do {
        // One body alone may always use the whole budget: a lone large
        // request is never refused, however the budget is set.
        if (held > 0 && held + bytes > _limits.body_bytes) return std::nullopt;
    } while (!_body_bytes.compare_exchange_weak(held, held + bytes, std::memory_order_relaxed));
    return ticket(this, std::string(), bytes);
}

std::optional<admission::ticket> admission::admit_live_read(const std::string& stream_key) {
    std::lock_guard lock(_mutex);
    auto& on_stream = _live_by_stream[stream_key];
    if (_live_reads >= _limits.live_reads || on_stream >= _limits.live_reads_per_stream) {
        if (on_stream == 0) _live_by_stream.erase(stream_key);
        return std::nullopt;
    }
    ++_live_reads;
    ++on_stream;
    return ticket(this, stream_key, 0);
}

void admission::release(const ticket& t) {
    if (t._stream.empty()) {
        _body_bytes.fetch_sub(t._bytes, std::memory_order_relaxed);
        return;
    }
    std::lock_guard lock(_mutex);
    --_live_reads;
    auto it = _live_by_stream.find(t._stream);
    if (it != _live_by_stream.end() && --it->second == 0) _live_by_stream.erase(it);
}

}  // namespace dstream::edge
