// WAL records (log/wal_format, docs/disk-format.md) as recovery reads them
// from a segment: records one after another until the bytes end or one fails.
// A decoded record encodes to the very bytes it came from, and every strict
// prefix of a record reads as truncated: a torn tail is never taken for
// corruption, which would stop the node from starting.
#include <string>

#include "fuzz_check.h"
#include "log/wal_format.h"

namespace {

using namespace dstream;
using fuzz::check;

void check_prefixes_are_truncated(std::string_view record) {
    // Every length would cost O(n^2) on big records; the boundaries that
    // matter are inside the header and around the payload's start and end.
    for (std::size_t cut : {std::size_t{0}, std::size_t{1}, std::size_t{4}, std::size_t{8},
                            log::wal_record_header_bytes - 1, log::wal_record_header_bytes,
                            record.size() / 2, record.size() - 1}) {
        if (cut >= record.size()) continue;
        log::wal_record r;
        std::size_t used = 0;
        check(log::decode_wal_record(record.substr(0, cut), r, used) ==
                  log::wal_decode_status::truncated,
              "a strict prefix of a record is truncated");
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view segment = fuzz::as_text(data, size);
    while (!segment.empty()) {
        log::wal_record record;
        std::size_t used = 0;
        const auto status = log::decode_wal_record(segment, record, used);
        if (status != log::wal_decode_status::ok) break;
        check(used >= log::wal_record_header_bytes && used <= segment.size(),
              "a record lies in the bytes");
        check(record.payload.size() == used - log::wal_record_header_bytes,
              "the payload fills the record");
        std::string encoded;
        log::append_wal_record(encoded, record.group, record.index, record.payload);
        check(encoded == segment.substr(0, used), "a decoded record encodes to its own bytes");
        check_prefixes_are_truncated(segment.substr(0, used));
        segment.remove_prefix(used);
    }

    // The input as a payload: what the writer encodes, recovery decodes.
    std::string encoded;
    const std::uint32_t group = size > 0 ? data[0] : 0;
    log::append_wal_record(encoded, group, size, fuzz::as_text(data, size));
    log::wal_record record;
    std::size_t used = 0;
    check(log::decode_wal_record(encoded, record, used) == log::wal_decode_status::ok &&
              used == encoded.size() && record.group == group && record.index == size &&
              record.payload == fuzz::as_text(data, size),
          "an encoded record decodes to itself");
    check_prefixes_are_truncated(encoded);
    return 0;
}
