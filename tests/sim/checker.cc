#include "checker.h"

#include <fmt/format.h>

namespace dstream::sim {

void checker::fail(const std::string& check, const std::string& detail) {
    if (failed()) return;
    _failure = fmt::format("{}: {} (at {} ms)", check, detail, _events.now());
    _trace("CHECK FAILED: {}", _failure);
}

void checker::entry_written(std::uint64_t node, std::uint32_t group, std::uint64_t index,
                            std::uint64_t term, std::uint64_t chain) {
    const auto [it, added] = _written.try_emplace({group, index, term}, chain, node);
    if (!added && it->second.first != chain) {
        fail("log matching",
             fmt::format("g{}: n{} wrote an entry at index {} of term {} whose log up to it "
                         "differs from n{}'s",
                         group, node, index, term, it->second.second));
    }
}

void checker::leadership(std::uint64_t node, std::uint32_t group, const log::leadership& now,
                         const log_view& log) {
    if (!now.leads()) return;
    const auto [it, added] = _leaders.try_emplace({group, now.term}, node);
    if (!added && it->second != node) {
        fail("election safety", fmt::format("g{}: n{} and n{} both lead term {}", group,
                                            it->second, node, now.term));
        return;
    }
    // The newest entry committed before this term: the new leader must hold
    // it (and so, by its chain, every entry before it).
    for (auto c = _committed.lower_bound({group + 1, 0}); c != _committed.begin();) {
        --c;
        if (c->first.first != group) break;
        if (c->second.lowest_term >= now.term) continue;
        const std::uint64_t index = c->first.second;
        if (index < log.base_index()) return;  // its snapshot covers it (checked when installed)
        const auto chain = log.chain_at(index);
        if (!chain || *chain != c->second.chain) {
            fail("leader completeness",
                 fmt::format("g{}: n{} leads term {} without the entry committed at index {} "
                             "(applied by n{} in an earlier term); its log ends at {}",
                             group, node, now.term, index, c->second.node, log.last_index()));
        }
        return;
    }
}

void checker::applied_through(std::uint64_t node, std::uint32_t group, std::uint64_t index,
                              std::uint64_t term, const log_view& log, std::uint64_t& walked) {
    for (std::uint64_t i = std::max(walked, log.base_index()) + 1; i <= index; ++i) {
        const auto chain = log.chain_at(i);
        if (!chain) {
            fail("state machine safety",
                 fmt::format("g{}: n{} applied index {} but its log holds {}..{}", group, node, i,
                             log.base_index() + 1, log.last_index()));
            return;
        }
        const auto [it, added] = _committed.try_emplace({group, i}, committed{*chain, term, node});
        if (added) continue;
        if (it->second.chain != *chain) {
            fail("state machine safety",
                 fmt::format("g{}: n{} applied a different entry at index {} than n{}", group,
                             node, i, it->second.node));
            return;
        }
        it->second.lowest_term = std::min(it->second.lowest_term, term);
    }
    walked = std::max(walked, index);
}

std::optional<std::uint64_t> checker::committed_chain(std::uint32_t group,
                                                      std::uint64_t index) const {
    const auto it = _committed.find({group, index});
    if (it == _committed.end()) return std::nullopt;
    return it->second.chain;
}

void checker::state_at(std::uint64_t node, std::uint32_t group, std::uint64_t index,
                       std::uint64_t digest) {
    const auto [it, added] = _states.try_emplace({group, index}, state_seen{digest, node});
    if (added) return;
    ++_states_compared;
    if (it->second.digest != digest) {
        fail("identical applied state",
             fmt::format("g{}: n{} and n{} hold different states after applying index {} ({:016x} {:016x})", group,
                         it->second.node, node, index, it->second.digest, digest));
    }
}

}  // namespace dstream::sim
