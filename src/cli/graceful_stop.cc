#include "cli/graceful_stop.h"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace dstream::cli {

graceful_stop::graceful_stop(boost::asio::io_context& io, edge::server& server,
                             std::chrono::seconds bound)
    : _io(io),
      _server(server),
      _bound(bound),
      _strand(boost::asio::make_strand(io)),
      _timer(_strand) {}

void graceful_stop::begin(int signal) {
    boost::asio::post(_strand, [this, signal] {
        _took = metrics::stopwatch();
        spdlog::info("dstream stopping: signal={} bound_s={}", signal, _bound.count());
        _timer.expires_after(_bound);
        _timer.async_wait([this](boost::system::error_code ec) {
            if (!ec) finish(true);
        });
        _server.drain([this] { boost::asio::post(_strand, [this] { finish(false); }); });
    });
}

void graceful_stop::finish(bool bound_reached) {
    if (_finished) return;
    _finished = true;
    _cut = bound_reached;
    _timer.cancel();
    if (bound_reached) {
        spdlog::warn("dstream stopping: bound of {} s reached, cutting what is left: {}",
                     _bound.count(), _server.open_work());
    }
    _io.stop();
}

}  // namespace dstream::cli
