#include "protocol/producer.h"

#include "protocol/decimal.h"

namespace dstream::protocol {
namespace {

producer_decision verdict(producer_verdict v) { return producer_decision{v, 0, 0, std::nullopt, 0}; }

}  // namespace

producer_decision evaluate_producer(const producer_record* record,
                                    std::optional<std::uint64_t> floor, const producer_write& w) {
    // extensions 5.4: the floor binds writes that carry Stream-Incarnation.
    if (w.with_incarnation && floor) {
        const bool forgotten = record == nullptr ? w.epoch <= *floor
                                                 : !record->above_floor &&
                                                       !(w.seq == 0 && w.epoch > *floor);
        if (forgotten) {
            producer_decision d = verdict(producer_verdict::producer_expired);
            d.answer_epoch = *floor;
            return d;
        }
    }
    if (record == nullptr) {
        if (w.seq == 0) return verdict(producer_verdict::apply);
        producer_decision d = verdict(producer_verdict::seq_gap);
        d.expected_seq = 0;
        return d;
    }
    if (w.epoch < record->epoch) {
        producer_decision d = verdict(producer_verdict::stale_epoch);
        d.answer_epoch = record->epoch;
        if (record->closed_epoch && w.epoch == *record->closed_epoch) {
            d.verdict = producer_verdict::epoch_closed_by_claim;
            d.closed_epoch = record->closed_epoch;
            d.closed_seq = record->closed_seq;
        }
        return d;
    }
    if (w.epoch > record->epoch) {
        if (w.seq != 0) {
            producer_decision d = verdict(producer_verdict::new_epoch_seq);
            d.expected_seq = 0;
            return d;
        }
        return verdict(producer_verdict::apply);
    }
    // The current epoch: the key (epoch, seq) decides, the identity confirms.
    // After a history rewrite only repeats of writes that survived it answer;
    // everything else of the epoch is refused for good.
    if (record->closed_by_history && w.seq > record->last_seq) {
        producer_decision d = verdict(producer_verdict::epoch_closed_by_history);
        d.answer_epoch = record->epoch;
        d.closed_epoch = record->epoch;
        d.closed_seq = record->last_seq;
        return d;
    }
    if (w.seq == record->last_seq) {
        if (w.identity != record->last_identity) {
            producer_decision d = verdict(producer_verdict::key_conflict);
            d.answer_epoch = record->epoch;
            return d;
        }
        producer_decision d = verdict(producer_verdict::repeat);
        if (w.seq == 0) {
            d.closed_epoch = record->closed_epoch;
            d.closed_seq = record->closed_seq;
        }
        return d;
    }
    if (w.seq < record->last_seq) {
        if (w.seq == 0) {
            // The claim's identity is held for the epoch's lifetime.
            if (w.identity != record->claim_identity) {
                producer_decision d = verdict(producer_verdict::key_conflict);
                d.answer_epoch = record->epoch;
                return d;
            }
            producer_decision d = verdict(producer_verdict::repeat_evicted);
            d.closed_epoch = record->closed_epoch;
            d.closed_seq = record->closed_seq;
            return d;
        }
        return verdict(producer_verdict::repeat_evicted);
    }
    if (w.seq == record->last_seq + 1) return verdict(producer_verdict::apply);
    producer_decision d = verdict(producer_verdict::seq_gap);
    d.expected_seq = record->last_seq + 1;
    return d;
}

producer_record record_applied(const producer_record* record, std::optional<std::uint64_t> floor,
                               const producer_write& w, std::uint64_t start, std::uint64_t end,
                               unix_ms now) {
    producer_record next = record ? *record : producer_record{};
    const bool claim = record == nullptr || w.epoch > record->epoch;
    if (claim) {
        const bool lifts_floor = floor && w.epoch > *floor;
        if (record != nullptr && record->above_floor) {
            // The claim closes the epoch it replaces (extensions 5.3).
            next.closed_epoch = record->epoch;
            next.closed_seq = record->last_seq;
        } else {
            // A new producer, or state opened at or below the floor: the
            // replaced epoch may be one the server forgot, so no closure.
            next.closed_epoch.reset();
            next.closed_seq = 0;
        }
        next.above_floor = record == nullptr ? (!floor || w.epoch > *floor)
                                             : (record->above_floor || lifts_floor);
        next.epoch = w.epoch;
        next.claim_identity = w.identity;
        next.closed_by_history = false;
    }
    next.last_seq = w.seq;
    next.last_start = start;
    next.last_end = end;
    next.last_identity = w.identity;
    next.last_closed = w.closes;
    next.last_write_ms = now;
    return next;
}

result<std::uint64_t> parse_producer_number(std::string_view text) {
    const auto bad = [] {
        return make_error(error_code::invalid_producer,
                          "Producer-Epoch and Producer-Seq must be integers from 0 to 2^53-1");
    };
    const auto value = parse_canonical_decimal(text, 16);
    if (!value || *value > max_producer_number) return bad();
    return *value;
}

result<body_digest> parse_body_digest(std::string_view text) {
    const auto bad = [] {
        return make_error(error_code::invalid_producer,
                          "Producer-Digest must be 64 lowercase hexadecimal digits");
    };
    if (text.size() != 64) return bad();
    body_digest out{};
    for (std::size_t i = 0; i < 32; ++i) {
        int v = 0;
        for (int k = 0; k < 2; ++k) {
            const char c = text[2 * i + static_cast<std::size_t>(k)];
            int nibble = -1;
            if (c >= '0' && c <= '9') nibble = c - '0';
            if (c >= 'a' && c <= 'f') nibble = c - 'a' + 10;
            if (nibble < 0) return bad();
            v = v * 16 + nibble;
        }
        out[i] = static_cast<std::uint8_t>(v);
    }
    return out;
}

}  // namespace dstream::protocol
