#pragma once
// Renders the answer of an applied (or refused) write: the one place that
// turns a state-machine outcome into status and typed headers.
#include "edge/exchange.h"
#include "state/apply_result.h"

namespace dstream::edge {

// Stream-Incarnation, and the typed headers a refusal carries (Stream-Closed
// with the final offset, producer headers, Stream-Last-Seq).
response render_refusal(const exchange& ex, const state::apply_result& r);

// The answer to an append or close: a refusal, or 200 for a new producer
// write and 204 for repeats, close-only writes and plain appends (base
// protocol 5.2, 5.2.1; extensions 5.3), with the receipt.
response render_append_answer(const exchange& ex, const state::apply_result& r, bool close_only);

void set_offset_header(response& res, std::string_view name, std::uint64_t offset);

// A read's refusal; it names the stream that answered (extensions 2.4: 410,
// 416 and snapshot 404 carry Stream-Incarnation). `incarnation` 0: no stream.
response render_read_refusal(const exchange& ex, const error& e, std::uint64_t incarnation);

}  // namespace dstream::edge
