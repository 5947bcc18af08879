#pragma once
// Where a fork's inherited bytes come from (base protocol 4.2).
#include <cstdint>
#include <string>

namespace dstream::state {

// A fork reads [0, offset) through its source, the stream `source_key` of
// `source_incarnation`, and holds its own bytes from `offset` on. The source
// may live in another group: the fork names it, never points at its state.
// `reference` names the source's reference to this fork: drawn per creation
// request, so that a failed request releases its own reference and never a
// fork's that another request created at the same URL.
struct fork_origin {
    std::string source_key;
    std::uint64_t source_incarnation = 0;
    std::uint64_t offset = 0;
    std::uint64_t reference = 0;

    // The same fork point of the same source (what an idempotent re-create compares).
    bool same_point(const fork_origin& o) const {
        return source_key == o.source_key && source_incarnation == o.source_incarnation &&
               offset == o.offset;
    }
};

}  // namespace dstream::state
