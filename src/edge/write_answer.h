#pragma once
// Renders the answer of an applied (or refused) write: the one place that
// turns a state-machine outcome into status and typed headers.
#include "edge/exchange.h"
#include "state/apply_result.h"

namespace dstream::edge {

// Stream-Incarnation, and the typed headers a refusal carries (Stream-Closed
// with the final offset, producer headers, Stream-Last-Seq).
response render_refusal(const exchange& ex, const state::apply_result& r);

// Producer-Epoch / Producer-Seq and the receipt of extensions 5.3.
void add_producer_answer(response& res, const state::apply_result& r);

void set_offset_header(response& res, std::string_view name, std::uint64_t offset);

}  // namespace dstream::edge
