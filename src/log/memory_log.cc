#include "log/memory_log.h"

#include <boost/asio/post.hpp>

namespace dstream::log {

std::uint64_t memory_log::append(std::string /*record*/) {
    const std::uint64_t index = _next_index++;
    // One notification covers every entry appended before it runs, like a
    // group commit, and it never runs inside append().
    if (!_notify_posted) {
        _notify_posted = true;
        boost::asio::post(_executor, [this] {
            _notify_posted = false;
            if (_handler) _handler(_next_index - 1, ok_status());
        });
    }
    return index;
}

}  // namespace dstream::log
