#pragma once
// extensions 5.7 and 9.2: a request this node cannot answer for its
// stream's group is sent where it is answered:
//   307 to the group's leader, with x-ursula-raft-leader-id, -group and -term;
//   307 to a node that hosts the group, naming only x-ursula-raft-group, when
//       this node holds no replica of it (a router caches no leader from it);
//   503 NO_LEADER with Retry-After and x-ursula-raft-group when no leader
//       (or no term of it) is known.
// A single node (no cluster) answers everything itself.
#include <optional>

#include "edge/exchange.h"
#include "service/stream_service.h"

namespace dstream::edge {

enum class answered_by {
    replica,  // any node that hosts the group: reads of what it applied
    leader,   // writes, and reads that must be linearizable
};

// The routing answer, or nothing when this node answers the request itself.
std::optional<response> route_elsewhere(const exchange& ex, const service::placement& where,
                                        answered_by need);

// The 307 to the leader or the 503 NO_LEADER, for a request that this node
// could not answer although it hosts the group (a read it cannot prove
// current, a leadership check that failed).
response route_to_leader(const exchange& ex, const service::placement& where);

// Whether this node reads for a client only once it caught up with the
// group's leader (a read index: the read_request's `linearizable`): on a
// follower, always. Its tail, its refusals (a stream created, recreated,
// deleted or retained since it applied) and its cold objects (which the
// leader removes once a delete or retention applied there) are then as
// current as the leader's when the request came; the bytes still come from
// this node. The leader reads what it applied.
bool catches_up_first(const exchange& ex, const service::placement& where);

}  // namespace dstream::edge
