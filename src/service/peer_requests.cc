#include "service/peer_requests.h"

#include "base/binary.h"

namespace dstream::service {
namespace {

constexpr std::uint8_t request_byte = 1;
constexpr std::uint8_t answer_byte = 2;

void put_optional(binary_writer& w, const std::optional<std::uint64_t>& v) {
    w.put_u8(v ? 1 : 0);
    w.put_u64(v.value_or(0));
}

bool get_optional(binary_reader& r, std::optional<std::uint64_t>& v) {
    std::uint8_t present = 0;
    std::uint64_t value = 0;
    if (!r.get_u8(present) || present > 1 || !r.get_u64(value)) return false;
    if (present == 1) v = value;
    return true;
}

std::optional<peer_request> decode_request(binary_reader& r) {
    peer_request q;
    std::uint8_t what = 0;
    if (!r.get_u8(what) || what < 1 || what > 3 || !r.get_u64(q.id) || !r.get_u64(q.from) ||
        !r.get_u32(q.group) || !r.get_string(q.key) || !r.get_u64(q.incarnation) ||
        !r.get_u64(q.start) || !r.get_u64(q.max_bytes) || !r.get_string(q.command) ||
        !r.at_end()) {
        return std::nullopt;
    }
    q.what = static_cast<peer_request::kind>(what);
    return q;
}

std::optional<peer_answer> decode_answer(binary_reader& r) {
    peer_answer a;
    std::uint8_t refused = 0, json = 0;
    if (!r.get_u64(a.id) || !r.get_u8(refused) || refused > 1) return std::nullopt;
    if (refused == 1) {
        std::uint32_t code = 0;
        error e;
        if (!r.get_u32(code) || code >= protocol::error_code_count || !r.get_string(e.message)) {
            return std::nullopt;
        }
        e.code = static_cast<protocol::error_code>(code);
        a.refusal = std::move(e);
    }
    std::optional<std::uint64_t> at;
    if (!r.get_u64(a.source.incarnation) || !r.get_string(a.source.content_type) ||
        !r.get_u8(json) || json > 1 || !get_optional(r, a.source.expiry.ttl_seconds) ||
        !get_optional(r, at) || !r.get_u64(a.source.tail) || !r.get_u64(a.next) ||
        !r.get_u64(a.tail) || !r.get_string(a.bytes) || !r.at_end()) {
        return std::nullopt;
    }
    a.source.json = json == 1;
    if (at) a.source.expiry.expires_at = static_cast<protocol::unix_ms>(*at);
    return a;
}

}  // namespace

std::string encode(const peer_request& q) {
    binary_writer w;
    w.put_u8(request_byte);
    w.put_u8(static_cast<std::uint8_t>(q.what));
    w.put_u64(q.id);
    w.put_u64(q.from);
    w.put_u32(q.group);
    w.put_string(q.key);
    w.put_u64(q.incarnation);
    w.put_u64(q.start);
    w.put_u64(q.max_bytes);
    w.put_string(q.command);
    return std::move(w).take();
}

std::string encode(const peer_answer& a) {
    binary_writer w;
    w.put_u8(answer_byte);
    w.put_u64(a.id);
    w.put_u8(a.refusal ? 1 : 0);
    if (a.refusal) {
        w.put_u32(static_cast<std::uint32_t>(a.refusal->code));
        w.put_string(a.refusal->message);
    }
    w.put_u64(a.source.incarnation);
    w.put_string(a.source.content_type);
    w.put_u8(a.source.json ? 1 : 0);
    put_optional(w, a.source.expiry.ttl_seconds);
    std::optional<std::uint64_t> at;
    if (a.source.expiry.expires_at) at = static_cast<std::uint64_t>(*a.source.expiry.expires_at);
    put_optional(w, at);
    w.put_u64(a.source.tail);
    w.put_u64(a.next);
    w.put_u64(a.tail);
    w.put_string(a.bytes);
    return std::move(w).take();
}

peer_message decode_peer_message(std::string_view bytes) {
    peer_message m;
    binary_reader r(bytes);
    std::uint8_t first = 0;
    if (!r.get_u8(first)) return m;
    if (first == request_byte) m.request = decode_request(r);
    if (first == answer_byte) m.answer = decode_answer(r);
    return m;
}

}  // namespace dstream::service
