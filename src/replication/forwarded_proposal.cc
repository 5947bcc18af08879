#include "replication/forwarded_proposal.h"

#include "base/binary.h"

namespace dstream::replication {

bool is_forwarded_proposal(std::string_view bytes) {
    return !bytes.empty() && static_cast<std::uint8_t>(bytes.front()) == forwarded_proposal_format;
}

std::string encode(const forwarded_proposal& m) {
    binary_writer w;
    w.put_u8(forwarded_proposal_format);
    w.put_u8(static_cast<std::uint8_t>(m.what));
    w.put_u64(m.id);
    w.put_u64(m.from);
    if (m.what == forwarded_proposal::kind::request) {
        w.put_string(m.command);
        return std::move(w).take();
    }
    const log::proposal& p = m.answer;
    w.put_u8(static_cast<std::uint8_t>(p.what));
    w.put_u64(p.index);
    w.put_u64(p.term);
    w.put_u8(static_cast<std::uint8_t>(p.leader.what));
    w.put_u64(p.leader.term);
    w.put_u64(p.leader.leader);
    w.put_u8(p.refusal ? 1 : 0);
    if (p.refusal) {
        w.put_u32(static_cast<std::uint32_t>(p.refusal->code));
        w.put_string(p.refusal->message);
    }
    return std::move(w).take();
}

std::optional<forwarded_proposal> decode_forwarded_proposal(std::string_view bytes) {
    binary_reader r(bytes);
    std::uint8_t format = 0, what = 0;
    forwarded_proposal m;
    if (!r.get_u8(format) || format != forwarded_proposal_format || !r.get_u8(what) ||
        !r.get_u64(m.id) || !r.get_u64(m.from)) {
        return std::nullopt;
    }
    if (what == static_cast<std::uint8_t>(forwarded_proposal::kind::request)) {
        m.what = forwarded_proposal::kind::request;
        if (!r.get_string(m.command) || !r.at_end()) return std::nullopt;
        return m;
    }
    if (what != static_cast<std::uint8_t>(forwarded_proposal::kind::answer)) return std::nullopt;
    m.what = forwarded_proposal::kind::answer;
    log::proposal& p = m.answer;
    std::uint8_t outcome = 0, role = 0, refused = 0;
    if (!r.get_u8(outcome) || outcome > 2 || !r.get_u64(p.index) || !r.get_u64(p.term) ||
        !r.get_u8(role) || role > 2 || !r.get_u64(p.leader.term) || !r.get_u64(p.leader.leader) ||
        !r.get_u8(refused) || refused > 1) {
        return std::nullopt;
    }
    p.what = static_cast<log::proposal::outcome>(outcome);
    p.leader.what = static_cast<log::role>(role);
    if (refused == 1) {
        std::uint32_t code = 0;
        error e;
        if (!r.get_u32(code) || code >= protocol::error_code_count || !r.get_string(e.message)) {
            return std::nullopt;
        }
        e.code = static_cast<protocol::error_code>(code);
        p.refusal = std::move(e);
    }
    if (!r.at_end()) return std::nullopt;
    return m;
}

}  // namespace dstream::replication
