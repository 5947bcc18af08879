#pragma once
// A checkpoint file's bytes as log/checkpoint_files writes them: the pieces
// of the image, then the CRC-32 of everything before it (docs/disk-format.md).
#include <string>
#include <string_view>
#include <zlib.h>

#include "fuzz_check.h"
#include "state/group_state.h"

namespace dstream::fuzz {

inline void append_crc32(std::string& bytes) {
    const auto crc = static_cast<std::uint32_t>(crc32(crc32(0L, Z_NULL, 0),
                                                      reinterpret_cast<const Bytef*>(bytes.data()),
                                                      static_cast<uInt>(bytes.size())));
    for (int i = 0; i < 4; ++i) bytes.push_back(static_cast<char>((crc >> (8 * i)) & 0xff));
}

inline std::string checkpoint_bytes(const state::checkpoint_image& image) {
    std::string bytes;
    for (const auto& piece : image.pieces) bytes.append(piece.data, piece.size);
    append_crc32(bytes);
    return bytes;
}

// Restores `bytes`, captures the restored state and restores that again: the
// capture must load, with the same group, index and streams, and capture as
// long as the first (no field lost or invented on the way). False when `bytes`
// do not load at all.
inline bool check_checkpoint_round_trip(std::string_view bytes) {
    std::uint32_t group = 0;
    std::uint64_t index = 0;
    auto restored = state::group_state::restore_checkpoint(bytes, group, index);
    if (!restored) return false;
    const std::string first = checkpoint_bytes(restored->capture_checkpoint(group, index));
    std::uint32_t group2 = 0;
    std::uint64_t index2 = 0;
    auto again = state::group_state::restore_checkpoint(first, group2, index2);
    check(again.ok(), "a captured checkpoint restores");
    check(group2 == group && index2 == index, "a checkpoint keeps its group and index");
    check(again->stream_count() == restored->stream_count(), "a checkpoint keeps its streams");
    const std::string second = checkpoint_bytes(again->capture_checkpoint(group, index));
    check(second.size() == first.size(), "a checkpoint of a restored checkpoint holds the same");
    return true;
}

}  // namespace dstream::fuzz
