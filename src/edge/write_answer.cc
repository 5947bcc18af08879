#include "edge/write_answer.h"

#include <array>
#include <charconv>

#include "edge/headers.h"
#include "edge/routing.h"
#include "protocol/offset.h"

namespace dstream::edge {

namespace {

void set_header(response& res, std::string_view name, std::string_view value) {
    res.set(boost::beast::string_view(name.data(), name.size()),
            boost::beast::string_view(value.data(), value.size()));
}

// Rendered on the stack: a number's text is copied into the field anyway.
template <typename Integer>
void set_number_header(response& res, std::string_view name, Integer value) {
    std::array<char, 24> digits{};
    const char* end = std::to_chars(digits.data(), digits.data() + digits.size(), value).ptr;
    set_header(res, name, std::string_view(digits.data(), end - digits.data()));
}

}  // namespace

void set_offset_header(response& res, std::string_view name, std::uint64_t offset) {
    std::array<char, protocol::offset_digits> digits{};
    protocol::format_offset_to(offset, digits.data());
    set_header(res, name, std::string_view(digits.data(), digits.size()));
}

// Producer-Closed-Epoch / -Seq: what a claim closed (extensions 5.3).
void add_closure(response& res, const state::apply_result& r) {
    if (!r.closed_epoch) return;
    set_number_header(res, hdr::producer_closed_epoch, *r.closed_epoch);
    set_number_header(res, hdr::producer_closed_seq, r.closed_seq);
}

response render_read_refusal(const exchange& ex, const error& e, std::uint64_t incarnation) {
    // A read refused by its leadership check proposed nothing: it goes to
    // the leader, or gets the 503 (extensions 9.2).
    if (e.code == protocol::error_code::no_leader && ex.options().cluster != nullptr &&
        !ex.target().key.empty()) {
        return route_to_leader(ex, ex.placement());
    }
    response res = ex.make_error(e);
    if (incarnation != 0) set_number_header(res, hdr::stream_incarnation, incarnation);
    return res;
}

response render_refusal(const exchange& ex, const state::apply_result& r) {
    response res = ex.make_error(*r.refusal);
    if (r.incarnation) set_number_header(res, hdr::stream_incarnation, *r.incarnation);
    switch (r.refusal->code) {
        case protocol::error_code::stream_closed:
            set_header(res, hdr::stream_closed, "true");
            set_offset_header(res, hdr::stream_next_offset, r.next_offset);
            break;
        case protocol::error_code::stream_seq_conflict:
            if (r.last_stream_seq) set_header(res, hdr::stream_last_seq, *r.last_stream_seq);
            break;
        default:
            break;
    }
    if (r.producer_epoch) set_number_header(res, hdr::producer_epoch, *r.producer_epoch);
    if (!r.producer_outcome.empty()) set_header(res, hdr::producer_outcome, r.producer_outcome);
    add_closure(res, r);
    if (r.expected_seq) set_number_header(res, hdr::producer_expected_seq, *r.expected_seq);
    if (r.received_seq) set_number_header(res, hdr::producer_received_seq, *r.received_seq);
    return res;
}

namespace {

// Producer-Epoch / Producer-Seq and the receipt of extensions 5.3.
void add_producer_answer(response& res, const state::apply_result& r) {
    if (r.producer_epoch) set_number_header(res, hdr::producer_epoch, *r.producer_epoch);
    if (r.producer_seq) set_number_header(res, hdr::producer_seq, *r.producer_seq);
    add_closure(res, r);
    if (r.receipt_evicted) {
        set_header(res, hdr::producer_outcome, "receipt-evicted");
        return;
    }
    set_offset_header(res, hdr::stream_offset, r.start_offset);
    set_offset_header(res, hdr::stream_next_offset, r.next_offset);
}

}  // namespace

response render_append_answer(const exchange& ex, const state::apply_result& r, bool close_only) {
    if (r.refusal) return render_refusal(ex, r);
    const bool fresh_producer_write =
        r.producer_write && r.kind == state::write_kind::appended && !close_only;
    response res =
        ex.make_response(fresh_producer_write ? http::status::ok : http::status::no_content);
    set_number_header(res, hdr::stream_incarnation, *r.incarnation);
    if (r.closed) set_header(res, hdr::stream_closed, "true");
    if (r.producer_write) {
        add_producer_answer(res, r);
    } else {
        set_offset_header(res, hdr::stream_next_offset, r.next_offset);
    }
    return res;
}

namespace {

void name_snapshot(response& res, const state::apply_result& r) {
    if (!r.snapshot_offset) return;
    set_offset_header(res, hdr::stream_snapshot_offset, *r.snapshot_offset);
    set_header(res, hdr::stream_snapshot_digest, r.snapshot_digest);
}

}  // namespace

response render_publish_answer(const exchange& ex, const state::apply_result& r) {
    response res = r.refusal ? render_refusal(ex, r) : ex.make_response(http::status::no_content);
    if (!r.refusal) set_number_header(res, hdr::stream_incarnation, *r.incarnation);
    name_snapshot(res, r);
    return res;
}

response render_parts_answer(const exchange& ex, const service::parts_answer& answer,
                             http::status done) {
    response res = answer.refusal ? ex.make_error(*answer.refusal) : ex.make_response(done);
    if (answer.incarnation != 0)
        set_number_header(res, hdr::stream_incarnation, answer.incarnation);
    if (!answer.part_id.empty()) set_header(res, hdr::stream_snapshot_part, answer.part_id);
    if (answer.exceeded) {
        const bool parts = answer.exceeded->what == service::staging_bound::kind::parts;
        set_number_header(res, parts ? hdr::ursula_max_staged_parts : hdr::ursula_max_staged_bytes,
                          answer.exceeded->value);
    }
    return res;
}

}  // namespace dstream::edge
