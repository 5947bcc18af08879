#include "cli/graceful_stop.h"

#include <boost/asio/post.hpp>
#include <spdlog/spdlog.h>

namespace dstream::cli {

graceful_stop::graceful_stop(runtime::io_threads& threads, edge::server& server,
                             edge::server* admin, std::chrono::seconds bound)
    : _threads(threads),
      _server(server),
      _admin(admin),
      _bound(bound),
      _strand(boost::asio::make_strand(threads.contexts().first())),
      _timer(_strand) {}

void graceful_stop::begin(int signal) {
    boost::asio::post(_strand, [this, signal] {
        _took = metrics::stopwatch();
        spdlog::info("dstream stopping: signal={} bound_s={}", signal, _bound.count());
        _timer.expires_after(_bound);
        _timer.async_wait([this](boost::system::error_code ec) {
            if (!ec) finish(true);
        });
        if (_admin != nullptr) _admin->drain([] {});
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
    _threads.stop();
}

}  // namespace dstream::cli
