#include "backup/files.h"

#include <algorithm>

#include "protocol/digest.h"

namespace dstream::backup {
namespace {

// The piece read at a time: bounds the memory of a copy of any size.
constexpr std::uint64_t piece_bytes = 8u << 20;

error damaged(const std::string& path, std::string_view why) {
    return make_error(protocol::error_code::invalid_request,
                      "backup file " + path + ": " + std::string(why));
}

// Feeds the object `key` of `from`, piece by piece, to `sink`; its size must
// be `size` when one is expected.
status read_pieces(storage::object_store& from, const std::string& key, std::uint64_t size,
                   const std::function<status(std::string_view)>& sink,
                   const progress_fn& progress) {
    std::string piece;
    for (std::uint64_t at = 0; at < size; at += piece.size()) {
        const std::uint64_t want = std::min(piece_bytes, size - at);
        if (auto got = from.get(key, at, want, piece); !got) return got;
        if (piece.size() != want) return damaged(key, "is shorter than its size");
        if (auto taken = sink(piece); !taken) return taken;
        if (progress) progress(piece.size());
    }
    return ok_status();
}

result<std::uint64_t> size_of(storage::object_store& from, const std::string& key) {
    auto size = from.size(key);
    if (!size) return size.err();
    if (!*size) return damaged(key, "is missing");
    return **size;
}

}  // namespace

result<file_entry> put_file(storage::object_store& to, const std::string& path,
                            std::string_view bytes) {
    if (auto written = to.put(path, bytes); !written) return written.err();
    return file_entry{path, bytes.size(), protocol::to_hex(protocol::blake3_256(bytes))};
}

result<file_entry> copy_object(storage::object_store& from, const std::string& key,
                               storage::object_store& to, const std::string& path,
                               const progress_fn& progress) {
    auto size = size_of(from, key);
    if (!size) return size.err();
    auto writer = to.open_writer(path);
    if (!writer) return writer.err();
    protocol::hasher digest;
    const auto copied = read_pieces(
        from, key, *size,
        [&](std::string_view piece) {
            digest.update(piece);
            return (*writer)->write(piece);
        },
        progress);
    if (!copied) return copied.err();
    if (auto finished = (*writer)->finish(); !finished) return finished.err();
    return file_entry{path, *size, protocol::to_hex(digest.finish())};
}

result<std::string> read_checked(storage::object_store& from, const file_entry& entry) {
    auto size = size_of(from, entry.path);
    if (!size) return size.err();
    if (*size != entry.size) return damaged(entry.path, "has another size than the manifest's");
    std::string bytes;
    if (auto got = from.get(entry.path, 0, entry.size, bytes); !got) return got.err();
    if (bytes.size() != entry.size ||
        protocol::to_hex(protocol::blake3_256(bytes)) != entry.blake3) {
        return damaged(entry.path, "does not match its digest in the manifest");
    }
    return bytes;
}

status restore_object(storage::object_store& from, const file_entry& entry,
                      storage::object_store& to, const std::string& key,
                      const progress_fn& progress) {
    auto size = size_of(from, entry.path);
    if (!size) return size.err();
    if (*size != entry.size) return damaged(entry.path, "has another size than the manifest's");
    auto writer = to.open_writer(key);
    if (!writer) return writer.err();
    protocol::hasher digest;
    const auto copied = read_pieces(
        from, entry.path, entry.size,
        [&](std::string_view piece) {
            digest.update(piece);
            return (*writer)->write(piece);
        },
        progress);
    if (!copied) return copied;
    // The writer is dropped unfinished on a mismatch: the object never appears.
    if (protocol::to_hex(digest.finish()) != entry.blake3)
        return damaged(entry.path, "does not match its digest in the manifest");
    return (*writer)->finish();
}

status check_file(storage::object_store& from, const file_entry& entry,
                  const progress_fn& progress) {
    auto size = size_of(from, entry.path);
    if (!size) return size.err();
    if (*size != entry.size) return damaged(entry.path, "has another size than the manifest's");
    protocol::hasher digest;
    const auto read = read_pieces(
        from, entry.path, entry.size,
        [&](std::string_view piece) {
            digest.update(piece);
            return ok_status();
        },
        progress);
    if (!read) return read;
    if (protocol::to_hex(digest.finish()) != entry.blake3)
        return damaged(entry.path, "does not match its digest in the manifest");
    return ok_status();
}

}  // namespace dstream::backup
