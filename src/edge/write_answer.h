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

// The answer to a snapshot publish or a parts commit (extensions 2.2): 204,
// or a refusal, with Stream-Incarnation and the latest snapshot it names.
response render_publish_answer(const exchange& ex, const state::apply_result& r);

// The answer to a part (`done`: 201) or a discard of the staged parts
// (`done`: 204): Stream-Incarnation, the part's id, and the bound a 429 applied.
response render_parts_answer(const exchange& ex, const service::parts_answer& answer,
                             http::status done);

void set_offset_header(response& res, std::string_view name, std::uint64_t offset);

// A read's refusal; it names the stream that answered (extensions 2.4: 410,
// 416 and snapshot 404 carry Stream-Incarnation). `incarnation` 0: no stream.
response render_read_refusal(const exchange& ex, const error& e, std::uint64_t incarnation);

}  // namespace dstream::edge
