#include "replication/read_index.h"

#include "base/binary.h"

namespace dstream::replication {

bool is_read_index_message(std::string_view bytes) {
    return !bytes.empty() && static_cast<std::uint8_t>(bytes.front()) == read_index_format;
}

std::string encode(const read_index_message& m) {
    binary_writer w;
    w.reserve(26);
    w.put_u8(read_index_format);
    w.put_u8(static_cast<std::uint8_t>(m.what));
    w.put_u64(m.id);
    w.put_u64(m.from);
    w.put_u64(m.index);
    return std::move(w).take();
}

std::optional<read_index_message> decode_read_index(std::string_view bytes) {
    binary_reader r(bytes);
    std::uint8_t format = 0, what = 0;
    read_index_message m;
    if (!r.get_u8(format) || format != read_index_format || !r.get_u8(what) || !r.get_u64(m.id) ||
        !r.get_u64(m.from) || !r.get_u64(m.index)) {
        return std::nullopt;
    }
    if (what < 1 || what > 3) return std::nullopt;
    m.what = static_cast<read_index_message::kind>(what);
    return m;
}

}  // namespace dstream::replication
