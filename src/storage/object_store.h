#pragma once
// Immutable objects under keys: the cold tier of stream bytes (chunks),
// snapshot bodies and staged snapshot parts: a local directory, or an S3
// bucket behind the same interface (s3_object_store.h: a writer is a
// multipart upload there, `size` a HEAD, `list` a ListObjectsV2).
//
// Calls block: run them on the I/O pool, never on a group strand or the edge
// (a streamed read, which blocks on its reader, on threads of its own).
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"
#include "storage/object_file.h"

namespace dstream::storage {

// An object written in pieces; it appears whole at finish() or never.
class object_writer {
public:
    // Abandons the object unless finish() succeeded.
    virtual ~object_writer() = default;
    virtual status write(std::string_view bytes) = 0;
    // Makes the object durable and visible under its key.
    virtual status finish() = 0;
};

// Where a streamed read hands an object's bytes, in order, as they arrive.
class range_sink {
public:
    virtual ~range_sink() = default;
    // Takes the next bytes; may block while the reader is behind. False when
    // the reader wants no more: the store ends the read there.
    virtual bool write(std::string_view bytes) = 0;
};

struct object_entry {
    std::string key;
    std::uint64_t size = 0;
    // When the object was last written, in ms since the Unix epoch (a file's
    // mtime, S3's LastModified); 0 when the store cannot tell, and then the
    // orphan sweep never takes it, having no age to judge.
    std::int64_t modified_ms = 0;
};

class object_store {
public:
    virtual ~object_store() = default;

    // Writes the whole object durably. Putting the same key again with the
    // same bytes is harmless (writers use deterministic keys).
    virtual status put(const std::string& key, std::string_view bytes) = 0;
    // For an object too large to hold in memory; the last writer to finish wins.
    virtual result<std::unique_ptr<object_writer>> open_writer(const std::string& key) = 0;
    // Reads `length` bytes from `offset` into `out` (replacing its contents).
    virtual status get(const std::string& key, std::uint64_t offset, std::uint64_t length,
                       std::string& out) = 0;
    // The object's file, open for reading, for bytes sent without copying
    // them (object_file.h); null when the store keeps no local files (S3)
    // or cannot open it: the caller then uses get().
    virtual std::shared_ptr<const object_file> open_file(const std::string& /*key*/) {
        return nullptr;
    }
    // Whether stream_range() sends the bytes on as they arrive (S3), so that
    // a read need not hold the range; otherwise it is a get() handed over whole.
    virtual bool streams_ranges() const { return false; }
    // Hands [offset, offset + length) to `sink` in order. Every byte it takes
    // is the object's: a store that streams checks the answer before the
    // first one and resumes from the byte reached after a transient fault.
    // Fails before any byte or after some (the sink then holds a prefix);
    // a sink that refuses ends the read with success (nothing more is wanted).
    virtual status stream_range(const std::string& key, std::uint64_t offset, std::uint64_t length,
                                range_sink& sink) {
        std::string bytes;
        if (auto got = get(key, offset, length, bytes); !got) return got;
        sink.write(bytes);
        return ok_status();
    }
    // The object's size; nothing when there is no such object.
    virtual result<std::optional<std::uint64_t>> size(const std::string& key) = 0;
    // Removing an absent object succeeds.
    virtual status remove(const std::string& key) = 0;
    // The objects under `prefix`, with their sizes and modification times.
    virtual result<std::vector<object_entry>> list(const std::string& prefix) = 0;
};

}  // namespace dstream::storage
