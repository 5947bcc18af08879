#include "log/wal_format.h"

#include "base/crc32.h"

namespace dstream::log {
namespace {

std::uint64_t get_le(std::string_view in, std::size_t at, int bytes) {
    std::uint64_t v = 0;
    for (int i = 0; i < bytes; ++i) {
        v |= static_cast<std::uint64_t>(static_cast<unsigned char>(in[at + i])) << (8 * i);
    }
    return v;
}

}  // namespace

wal_record_header make_wal_record_header(std::uint32_t group, std::uint64_t index,
                                         std::string_view payload, std::string_view rest) {
    // Filled in place: a record header is made for every write.
    wal_record_header head{};
    const auto put = [&head](std::size_t at, std::uint64_t v, int bytes) {
        for (int i = 0; i < bytes; ++i) head[at + i] = static_cast<char>((v >> (8 * i)) & 0xff);
    };
    put(0, payload.size() + rest.size(), 4);
    put(8, group, 4);
    put(12, index, 8);
    const std::uint32_t crc = crc32_update(
        crc32_update(crc32_of(std::string_view(head.data() + 8, 12)), payload), rest);
    put(4, crc, 4);
    return head;
}

void append_wal_record(std::string& out, std::uint32_t group, std::uint64_t index,
                       std::string_view payload) {
    const wal_record_header head = make_wal_record_header(group, index, payload);
    out.append(head.data(), head.size());
    out.append(payload);
}

wal_decode_status decode_wal_record(std::string_view in, wal_record& record,
                                    std::size_t& consumed) {
    if (in.size() < wal_record_header_bytes) return wal_decode_status::truncated;
    const auto length = static_cast<std::uint32_t>(get_le(in, 0, 4));
    if (length > wal_max_payload_bytes) return wal_decode_status::corrupt;
    if (in.size() < wal_record_header_bytes + length) return wal_decode_status::truncated;
    const auto crc = static_cast<std::uint32_t>(get_le(in, 4, 4));
    if (crc32_of(in.substr(8, 12 + length)) != crc) return wal_decode_status::corrupt;
    record.group = static_cast<std::uint32_t>(get_le(in, 8, 4));
    record.index = get_le(in, 12, 8);
    record.payload = in.substr(wal_record_header_bytes, length);
    consumed = wal_record_header_bytes + length;
    return wal_decode_status::ok;
}

}  // namespace dstream::log
