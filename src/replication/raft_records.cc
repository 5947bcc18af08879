#include "replication/raft_records.h"

#include "base/binary.h"

namespace dstream::replication {
namespace {

raft_record_kind record_kind(entry_kind kind) {
    switch (kind) {
        case entry_kind::barrier:
            return raft_record_kind::barrier;
        case entry_kind::configuration:
            return raft_record_kind::configuration;
        case entry_kind::command:
            break;
    }
    return raft_record_kind::command;
}

}  // namespace

log::wal_payload encode_entry_record(const log_entry& entry) {
    binary_writer head;
    head.put_u8(static_cast<std::uint8_t>(record_kind(entry.kind)));
    head.put_u64(entry.term);
    return log::wal_payload(std::move(head).take(), entry.bytes);
}

std::string encode_hard_state_record(std::uint64_t term, std::uint64_t vote) {
    binary_writer w;
    w.put_u8(static_cast<std::uint8_t>(raft_record_kind::hard_state));
    w.put_u64(term);
    w.put_u64(vote);
    return std::move(w).take();
}

std::string encode_snapshot_installed_record(std::uint64_t term) {
    binary_writer w;
    w.put_u8(static_cast<std::uint8_t>(raft_record_kind::snapshot_installed));
    w.put_u64(term);
    return std::move(w).take();
}

result<raft_record> decode_raft_record(std::string_view payload) {
    const auto bad = [] {
        return make_error(protocol::error_code::internal, "a Raft record of the WAL is malformed");
    };
    binary_reader r(payload);
    std::uint8_t kind = 0;
    raft_record out;
    if (!r.get_u8(kind) || !r.get_u64(out.term)) return bad();
    out.kind = static_cast<raft_record_kind>(kind);
    switch (out.kind) {
        case raft_record_kind::command:
        case raft_record_kind::barrier:
        case raft_record_kind::configuration:
            out.bytes = payload.substr(9);
            return out;
        case raft_record_kind::hard_state:
            if (!r.get_u64(out.vote) || !r.at_end()) return bad();
            return out;
        case raft_record_kind::snapshot_installed:
            if (!r.at_end()) return bad();
            return out;
    }
    return bad();
}

log_entry entry_of(const raft_record& record) {
    log_entry e;
    e.term = record.term;
    e.kind = record.kind == raft_record_kind::barrier        ? entry_kind::barrier
             : record.kind == raft_record_kind::configuration ? entry_kind::configuration
                                                               : entry_kind::command;
    e.bytes = byte_slice::owning(std::string(record.bytes));
    return e;
}

std::string encode_snapshot_header(const snapshot_meta& meta, std::uint64_t term,
                                   std::uint64_t vote) {
    binary_writer w;
    w.put_u8(1);  // version
    w.put_u64(meta.index);
    w.put_u64(meta.term);
    w.put_u64(meta.configuration_index);
    w.put_u32(static_cast<std::uint32_t>(meta.voters.size()));
    for (const auto id : meta.voters) w.put_u64(id);
    w.put_u64(term);
    w.put_u64(vote);
    return std::move(w).take();
}

result<snapshot_header> decode_snapshot_header(std::string_view bytes) {
    const auto bad = [] {
        return make_error(protocol::error_code::internal, "a snapshot header is malformed");
    };
    binary_reader r(bytes);
    snapshot_header out;
    std::uint8_t version = 0;
    std::uint32_t voters = 0;
    if (!r.get_u8(version) || version != 1 || !r.get_u64(out.meta.index) ||
        !r.get_u64(out.meta.term) || !r.get_u64(out.meta.configuration_index) ||
        !r.get_u32(voters) || voters > 1024) {
        return bad();
    }
    for (std::uint32_t i = 0; i < voters; ++i) {
        std::uint64_t id = 0;
        if (!r.get_u64(id)) return bad();
        out.meta.voters.push_back(id);
    }
    if (!r.get_u64(out.term) || !r.get_u64(out.vote) || !r.at_end()) return bad();
    return out;
}

}  // namespace dstream::replication
