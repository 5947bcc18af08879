#pragma once
// The leader's count of each stream's staged snapshot parts (extensions 2.2,
// Upload in Parts, and its notes): per stream key, across its incarnations,
// the parts staged and the parts still uploading, held against the bounds
// before a part is admitted. Leader-local memory, rebuilt from listings of
// the store; any thread (one mutex).
#include <chrono>
#include <cstdint>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>
#include <vector>

#include "service/stream_service.h"
#include "storage/object_store.h"

namespace dstream::service {

// Twice what one commit can use, so an abandoned upload and a full retry fit.
inline constexpr std::uint64_t max_staged_parts = 8192;
inline constexpr std::uint64_t max_staged_bytes = std::uint64_t{2} << 30;

class staging_ledger : public std::enable_shared_from_this<staging_ledger> {
public:
    struct admission {
        std::optional<staging_bound> exceeded;  // refused
        bool needs_listing = false;             // list the stream's parts, then ask again
        std::unique_ptr<part_upload> upload;    // admitted
    };

    // Admits a part declaring `declared_bytes`. Asks for a listing at the
    // stream's first part since start (or since the sweep), and before a
    // refusal when the last listing is over a minute old; `listed_now` says
    // the caller just listed.
    admission admit(const std::string& key, std::uint64_t declared_bytes, bool listed_now);

    // The upload is now the object `object_key` of `size` bytes. False for
    // an upload this ledger did not admit.
    bool staged(part_upload& upload, const std::string& object_key, std::uint64_t size);

    // A listing of the stream's parts replaces what the ledger knew, except
    // parts staged after it began (the store may not have listed them).
    std::uint64_t begin_listing();
    void end_listing(const std::string& key, std::uint64_t began,
                     std::vector<storage::object_entry> parts);

    // The incarnations the stream's known parts were staged for.
    std::vector<std::uint64_t> incarnations(const std::string& key) const;
    // Every stream lists again at its next part (the sweep removed some).
    void forget_listings();

private:
    friend class ledger_upload;
    using clock = std::chrono::steady_clock;

    struct staged_part {
        std::uint64_t size = 0;
        std::uint64_t change = 0;  // when this node staged it; 0: listed
    };
    struct stream_parts {
        std::unordered_map<std::string, staged_part> staged;  // by object key
        std::uint64_t staged_bytes = 0;
        std::uint64_t uploading = 0;
        std::uint64_t uploading_bytes = 0;
        std::optional<clock::time_point> listed_at;
    };

    static std::optional<staging_bound> exceeded(const stream_parts& s,
                                                 std::uint64_t declared_bytes);
    void release(const std::string& key, std::uint64_t declared_bytes);
    void drop_if_idle(std::unordered_map<std::string, stream_parts>::iterator it);

    mutable std::mutex _mutex;
    std::unordered_map<std::string, stream_parts> _streams;
    std::uint64_t _changes = 0;
};

}  // namespace dstream::service
