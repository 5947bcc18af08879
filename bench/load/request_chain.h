// Set-up work that is not measured: for every item (a stream), a chain of
// requests sent one after another, each able to use the answer before it
// (create, then publish a snapshot at the offset the create answered, ...).
// Items are spread over keep-alive connections: connection k takes items
// k, k + C, k + 2C, ... in turn.
//
// Any non-2xx answer or transport failure ends the item's chain and counts
// as a failure: set-up never retries.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "http_client.h"
#include "runner.h"

namespace dstream::bench {

class request_chain {
public:
    // Fills `head` (cleared by the caller) and `body` (which must stay valid
    // until the answer) with step `step` of `item`; `previous` is the answer
    // to step - 1 (nullptr for step 0), its captured fields in the order of
    // capture_fields(). Returns false when the item has no more steps.
    // Called on the thread of the item's connection; items never share one.
    virtual bool next(std::size_t item, unsigned step, const response* previous, std::string& head,
                      std::string_view& body) = 0;

    // Response header fields that next() wants to see in `previous`.
    virtual std::vector<std::string> capture_fields() const { return {}; }

protected:
    ~request_chain() = default;
};

// Runs every item's chain to its end over `connections` connections (at most
// one per item) within `limit`. True when every request answered 2xx;
// otherwise error names the first failures.
bool run_chains(worker_pool& pool, const target& t, std::size_t items, unsigned connections,
                request_chain& chain, std::chrono::seconds limit, std::string& error);

}  // namespace dstream::bench
