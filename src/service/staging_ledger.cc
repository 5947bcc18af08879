#include "service/staging_ledger.h"

#include <set>

#include "service/cold_tier.h"

namespace dstream::service {

// Uncounts its part unless it was staged; it holds the ledger, so it may
// outlive the engine that admitted it (a connection torn down at exit).
class ledger_upload final : public part_upload {
public:
    ledger_upload(std::shared_ptr<staging_ledger> ledger, std::string key, std::uint64_t bytes)
        : _ledger(std::move(ledger)), _key(std::move(key)), _bytes(bytes) {}
    ~ledger_upload() override {
        if (!_settled) _ledger->release(_key, _bytes);
    }

    const staging_ledger* ledger() const { return _ledger.get(); }
    const std::string& key() const { return _key; }
    std::uint64_t bytes() const { return _bytes; }
    void settle() { _settled = true; }

private:
    std::shared_ptr<staging_ledger> _ledger;
    std::string _key;
    std::uint64_t _bytes;
    bool _settled = false;
};

namespace {

constexpr auto listing_fresh_for = std::chrono::minutes(1);

}  // namespace

std::optional<staging_bound> staging_ledger::exceeded(const stream_parts& s,
                                                      std::uint64_t declared_bytes) {
    if (s.staged.size() + s.uploading + 1 > max_staged_parts) {
        return staging_bound{staging_bound::kind::parts, max_staged_parts};
    }
    if (s.staged_bytes + s.uploading_bytes + declared_bytes > max_staged_bytes) {
        return staging_bound{staging_bound::kind::bytes, max_staged_bytes};
    }
    return std::nullopt;
}

staging_ledger::admission staging_ledger::admit(const std::string& key,
                                                std::uint64_t declared_bytes, bool listed_now) {
    admission out;
    const std::lock_guard lock(_mutex);
    stream_parts& s = _streams[key];
    const auto now = clock::now();
    if (listed_now) s.listed_at = now;
    if (!s.listed_at) {
        out.needs_listing = true;
        return out;
    }
    if (auto bound = exceeded(s, declared_bytes)) {
        // Parts may have gone since (another node's commit, the sweep): a
        // stale count is refreshed before it refuses.
        if (!listed_now && now - *s.listed_at > listing_fresh_for) {
            out.needs_listing = true;
        } else {
            out.exceeded = bound;
        }
        return out;
    }
    ++s.uploading;
    s.uploading_bytes += declared_bytes;
    out.upload = std::make_unique<ledger_upload>(shared_from_this(), key, declared_bytes);
    return out;
}

bool staging_ledger::staged(part_upload& upload, const std::string& object_key,
                            std::uint64_t size) {
    auto* mine = dynamic_cast<ledger_upload*>(&upload);
    if (mine == nullptr || mine->ledger() != this) return false;
    const std::lock_guard lock(_mutex);
    stream_parts& s = _streams[mine->key()];
    --s.uploading;
    s.uploading_bytes -= mine->bytes();
    auto [it, fresh] = s.staged.try_emplace(object_key, staged_part{size, ++_changes});
    if (fresh) s.staged_bytes += size;
    mine->settle();
    return true;
}

void staging_ledger::release(const std::string& key, std::uint64_t declared_bytes) {
    const std::lock_guard lock(_mutex);
    auto it = _streams.find(key);
    if (it == _streams.end()) return;
    --it->second.uploading;
    it->second.uploading_bytes -= declared_bytes;
    drop_if_idle(it);
}

void staging_ledger::drop_if_idle(std::unordered_map<std::string, stream_parts>::iterator it) {
    // A stream with nothing staged or uploading costs nothing to list again.
    if (it->second.staged.empty() && it->second.uploading == 0) _streams.erase(it);
}

std::uint64_t staging_ledger::begin_listing() {
    const std::lock_guard lock(_mutex);
    return _changes;
}

void staging_ledger::end_listing(const std::string& key, std::uint64_t began,
                                 std::vector<storage::object_entry> parts) {
    const std::lock_guard lock(_mutex);
    stream_parts& s = _streams[key];
    std::unordered_map<std::string, staged_part> listed;
    for (auto& part : parts) listed.emplace(std::move(part.key), staged_part{part.size, 0});
    for (auto& [object_key, part] : s.staged) {
        if (part.change > began) listed.try_emplace(object_key, part);
    }
    s.staged = std::move(listed);
    s.staged_bytes = 0;
    for (const auto& [object_key, part] : s.staged) s.staged_bytes += part.size;
    s.listed_at = clock::now();
    drop_if_idle(_streams.find(key));
}

std::vector<std::uint64_t> staging_ledger::incarnations(const std::string& key) const {
    const std::lock_guard lock(_mutex);
    std::set<std::uint64_t> seen;
    if (auto it = _streams.find(key); it != _streams.end()) {
        for (const auto& [object_key, part] : it->second.staged) {
            if (auto name = parse_part_object_key(object_key)) seen.insert(name->incarnation);
        }
    }
    return {seen.begin(), seen.end()};
}

void staging_ledger::forget_listings() {
    const std::lock_guard lock(_mutex);
    for (auto& [key, s] : _streams) s.listed_at.reset();
}

}  // namespace dstream::service
