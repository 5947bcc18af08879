#include "service/unhosted_log.h"

namespace dstream::service {

log::proposal unhosted_log::propose(std::string /*bytes*/) { return log::proposal{}; }

void unhosted_log::confirm_leadership(confirmed_handler done) { done(log::leadership{}, false); }

void unhosted_log::save_snapshot(std::uint64_t /*index*/, std::uint64_t /*term*/,
                                 state::checkpoint_image /*image*/, saved_handler done) {
    // Nothing was ever applied here, so nothing is worth keeping.
    done(make_error(protocol::error_code::internal, "this node holds no replica of the group"));
}

}  // namespace dstream::service
