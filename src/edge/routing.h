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

// Whether a follower must catch up with its leader (a read index, the
// read_request's `linearizable`) before it gives this answer: a refusal (the
// stream may have been created, recreated or extended since this replica
// applied), or bytes that reach this replica's tail of an open stream, which
// may lie behind the leader's (immutable-reads 4.3 note). Bytes strictly
// below that tail, or up to a closed tail, are the same on every replica.
bool follower_catches_up(const exchange& ex, const service::placement& where,
                         const service::stream_view& view);

}  // namespace dstream::edge
