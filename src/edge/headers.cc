#include "edge/headers.h"

#include <boost/beast/core/string.hpp>

#include "protocol/producer.h"

namespace dstream::edge {

using protocol::error_code;

result<std::optional<std::string_view>> single_header(const request& req, std::string_view name) {
    // A walk of the request's few fields, most told apart by length alone:
    // cheaper than a descent of the field set, which compares names without
    // case at every node, and still bounded by the head's size limit.
    std::optional<std::string_view> value;
    for (const auto& field : req) {
        const auto field_name = field.name_string();
        if (field_name.size() != name.size() ||
            !boost::beast::iequals(field_name,
                                   boost::beast::string_view(name.data(), name.size()))) {
            continue;
        }
        if (value) {
            return make_error(error_code::invalid_header,
                              "header " + std::string(name) + " appears more than once");
        }
        value = std::string_view(field.value().data(), field.value().size());
    }
    return value;
}

bool stream_closed_requested(const request& req) {
    auto it = req.find(hdr::stream_closed);
    return it != req.end() && boost::beast::iequals(it->value(), "true");
}

result<std::optional<std::uint64_t>> incarnation_precondition(const request& req) {
    auto value = single_header(req, hdr::stream_incarnation);
    if (!value) return value.err();
    if (!*value) return std::optional<std::uint64_t>{};
    constexpr std::uint64_t low = std::uint64_t{1} << 52;
    std::string_view text = **value;
    std::uint64_t token = 0;
    bool valid = !text.empty() && text.size() == 16 && text[0] != '0';
    for (char c : text) {
        if (c < '0' || c > '9') {
            valid = false;
            break;
        }
        token = token * 10 + static_cast<std::uint64_t>(c - '0');
    }
    if (!valid || token < low || token >= 2 * low) {
        return make_error(error_code::invalid_header, "Stream-Incarnation is not a valid token");
    }
    return std::optional<std::uint64_t>{token};
}

bool has_producer_headers(const request& req) {
    for (auto name : {hdr::producer_id, hdr::producer_epoch, hdr::producer_seq}) {
        if (req.find(name) != req.end()) return true;
    }
    return false;
}

result<std::optional<state::producer_key>> producer_headers(const request& req) {
    auto id = single_header(req, hdr::producer_id);
    auto epoch = single_header(req, hdr::producer_epoch);
    auto seq = single_header(req, hdr::producer_seq);
    if (!id) return id.err();
    if (!epoch) return epoch.err();
    if (!seq) return seq.err();
    const int present = (*id ? 1 : 0) + (*epoch ? 1 : 0) + (*seq ? 1 : 0);
    if (present == 0) return std::optional<state::producer_key>{};
    if (present != 3) {
        return make_error(error_code::invalid_producer,
                          "Producer-Id, Producer-Epoch and Producer-Seq must be sent together");
    }
    if ((*id)->empty()) return make_error(error_code::invalid_producer, "Producer-Id is empty");
    auto e = protocol::parse_producer_number(**epoch);
    if (!e) return e.err();
    auto s = protocol::parse_producer_number(**seq);
    if (!s) return s.err();
    state::producer_key key{std::string(**id), *e, *s, std::nullopt};
    auto digest = single_header(req, hdr::producer_digest);
    if (!digest) return digest.err();
    if (*digest) {
        auto parsed = protocol::parse_body_digest(**digest);
        if (!parsed) return parsed.err();
        key.identity = *parsed;
    }
    return std::optional<state::producer_key>{std::move(key)};
}

}  // namespace dstream::edge
