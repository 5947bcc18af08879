#include "protocol/producer.h"

namespace dstream::protocol {

producer_decision evaluate_producer(const producer_record* record, std::uint64_t epoch,
                                    std::uint64_t seq) {
    if (record == nullptr) {
        if (seq == 0) return {producer_verdict::apply, 0};
        return {producer_verdict::seq_gap, 0};
    }
    if (epoch < record->epoch) return {producer_verdict::stale_epoch, 0};
    if (epoch > record->epoch) {
        if (seq != 0) return {producer_verdict::new_epoch_seq, 0};
        return {producer_verdict::apply, 0};
    }
    if (seq <= record->last_seq) return {producer_verdict::duplicate, 0};
    if (seq == record->last_seq + 1) return {producer_verdict::apply, 0};
    return {producer_verdict::seq_gap, record->last_seq + 1};
}

result<std::uint64_t> parse_producer_number(std::string_view text) {
    const auto bad = [] {
        return make_error(error_code::invalid_producer,
                          "Producer-Epoch and Producer-Seq must be integers from 0 to 2^53-1");
    };
    if (text.empty() || text.size() > 16 || (text.size() > 1 && text[0] == '0')) return bad();
    std::uint64_t value = 0;
    for (char c : text) {
        if (c < '0' || c > '9') return bad();
        value = value * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (value > max_producer_number) return bad();
    return value;
}

}  // namespace dstream::protocol
