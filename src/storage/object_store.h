#pragma once
// Immutable objects under keys: the cold tier of stream bytes (chunks), and
// later snapshot bodies and staged parts. A local directory backs it on one
// node; S3 later, behind the same interface.
//
// Calls block: run them on the I/O pool, never on a group strand or the edge.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "base/result.h"

namespace dstream::storage {

class object_store {
public:
    virtual ~object_store() = default;

    // Writes the whole object durably. Putting the same key again with the
    // same bytes is harmless (writers use deterministic keys).
    virtual status put(const std::string& key, std::string_view bytes) = 0;
    // Reads `length` bytes from `offset` into `out` (replacing its contents).
    virtual status get(const std::string& key, std::uint64_t offset, std::uint64_t length,
                       std::string& out) = 0;
    virtual status remove(const std::string& key) = 0;
    // Keys under `prefix`.
    virtual result<std::vector<std::string>> list(const std::string& prefix) = 0;
};

}  // namespace dstream::storage
