#pragma once
// Read-only bytes that keep their memory alive: a view and a share of
// whatever owns the memory it points into (a stream's hot block, a cold
// chunk, a Raft entry). Copies share the memory; none copies the bytes, so
// one piece of data can go to several places at once (a Raft entry to the
// log, the WAL and every follower's connection) and live as long as the
// last of them needs it.
#include <cstddef>
#include <memory>
#include <string>
#include <string_view>

namespace dstream {

struct byte_slice {
    std::shared_ptr<const void> owner;  // null: memory that outlives every reader
    const char* data = nullptr;
    std::size_t size = 0;

    // Takes the string; the slice covers all of it. Its characters do not
    // move unless they are few (a short string's live inside it).
    static byte_slice owning(std::string bytes) {
        auto held = std::make_shared<const std::string>(std::move(bytes));
        return byte_slice{held, held->data(), held->size()};
    }

    std::string_view view() const { return {data, size}; }
    bool empty() const { return size == 0; }
    // [at, at + n) of this slice, sharing its owner.
    byte_slice sub(std::size_t at, std::size_t n) const { return byte_slice{owner, data + at, n}; }
};

}  // namespace dstream
