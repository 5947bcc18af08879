#pragma once
// One replica's log as it wrote it (every append, truncation and installed
// snapshot goes through its raft_storage), with a chain digest per entry:
// the checks' model of the log the replica holds in memory.
#include <cstdint>
#include <deque>
#include <optional>
#include <string_view>

#include "digest.h"

namespace dstream::sim {

class log_view {
public:
    // The log starts after `base_index` (a snapshot's, or 0), whose chain is `base_chain`.
    void reset(std::uint64_t base_index, std::uint64_t base_chain) {
        _base_index = base_index;
        _base_chain = base_chain;
        _entries.clear();
    }
    // The entry at `index`, voiding every entry from it on; its chain, or
    // nothing when the index leaves a gap or lies in the snapshot.
    std::optional<std::uint64_t> put(std::uint64_t index, std::uint64_t term, int kind,
                                     std::string_view bytes) {
        if (index <= _base_index || index > last_index() + 1) return std::nullopt;
        _entries.resize(index - _base_index - 1);
        const std::uint64_t prev = index - 1 == _base_index ? _base_chain : _entries.back();
        const std::uint64_t chain =
            mix(mix(prev, term), fnv1a(bytes, static_cast<std::uint64_t>(kind) + 1));
        _entries.push_back(chain);
        return chain;
    }
    // The replica dropped its entries after `last` (it restarted from what is durable).
    void truncate_after(std::uint64_t last) {
        if (last < _base_index) last = _base_index;
        if (last - _base_index < _entries.size()) _entries.resize(last - _base_index);
    }

    std::uint64_t base_index() const { return _base_index; }
    std::uint64_t last_index() const { return _base_index + _entries.size(); }
    std::optional<std::uint64_t> chain_at(std::uint64_t index) const {
        if (index == _base_index) return _base_chain;
        if (index < _base_index || index > last_index()) return std::nullopt;
        return _entries[index - _base_index - 1];
    }

private:
    std::uint64_t _base_index = 0;
    std::uint64_t _base_chain = 0;
    std::deque<std::uint64_t> _entries;  // each entry's chain
};

}  // namespace dstream::sim
