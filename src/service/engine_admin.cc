// The engine's operator work on whole groups, for the admin listener: a
// backup's capture and a restore's or an accepted loss's proposal. Both are
// the leader's (a capture of a leader's applied state is committed state).
#include <boost/asio/post.hpp>

#include "runtime/await_callback.h"
#include "service/engine.h"

namespace dstream::service {

namespace asio = boost::asio;

asio::awaitable<group_capture> engine::capture_group(std::uint32_t group_id,
                                                     const hold_objects_fn& hold) {
    return runtime::await_callback<group_capture>(
        [&g = *_groups.at(group_id), &hold](runtime::deliver_fn<group_capture> done) {
            asio::post(g.strand(), [&g, &hold, done = std::move(done)]() mutable {
                done(g.capture(hold));
            });
        });
}

asio::awaitable<state::apply_result> engine::propose_to_group(std::uint32_t group_id,
                                                              state::command_body& body) {
    return runtime::await_callback<state::apply_result>(
        [&g = *_groups.at(group_id), &body](runtime::deliver_fn<state::apply_result> done) {
            g.submit(std::move(body), std::move(done));
        });
}

}  // namespace dstream::service
