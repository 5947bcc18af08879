#pragma once
// The log of a group of which this node holds no replica (a cluster with
// more nodes than voters per group): it never leads, never commits, and
// knows no leader, so the group stays empty and every request the edge did
// not redirect is refused NO_LEADER instead of reaching a state that is not
// there.
#include "log/group_log.h"

namespace dstream::service {

class unhosted_log final : public log::group_log {
public:
    void attach(log::log_listener& /*listener*/) override {}
    void start() override {}
    log::proposal propose(std::string bytes) override;
    void confirm_leadership(confirmed_handler done) override;
    void save_snapshot(std::uint64_t index, std::uint64_t term, state::checkpoint_image image,
                       saved_handler done) override;
    log::leadership current() const override { return {}; }
    void stop() override {}
};

}  // namespace dstream::service
