#include "service/group_replica.h"

#include <stdexcept>
#include <string>
#include <variant>

#include "service/service_metrics.h"
#include "state/command.h"

namespace dstream::service {

group_replica::group_replica(std::uint32_t id, service_metrics& metrics)
    : _id(id), _metrics(metrics) {}

void group_replica::report(std::int64_t streams_delta, std::int64_t hot_bytes_delta) {
    _metrics.streams.add(streams_delta);
    _metrics.hot_bytes.add(hot_bytes_delta);
}

void group_replica::restore(state::group_state state, std::uint64_t index, std::uint64_t term) {
    const auto streams_before = static_cast<std::int64_t>(_state.stream_count());
    _state = std::move(state);
    _applied_index = index;
    _applied_term = term;
    _since_snapshot = 0;
    recount(streams_before);
}

void group_replica::recount(std::int64_t streams_before) {
    const auto hot_before = static_cast<std::int64_t>(_hot_bytes);
    _hot_bytes = 0;
    const auto count = [&](const std::string&, const state::stream& s) {
        _hot_bytes += s.hot_bytes_held();
    };
    _state.for_each_stream(count);
    _state.for_each_retired_stream(count);
    report(static_cast<std::int64_t>(_state.stream_count()) - streams_before,
           static_cast<std::int64_t>(_hot_bytes) - hot_before);
}

state::command group_replica::decode(std::uint64_t index, std::string_view bytes) const {
    auto cmd = state::decode_command(bytes);
    if (!cmd) {
        throw std::runtime_error("undecodable command at index " + std::to_string(index) +
                                 " of group " + std::to_string(_id) + "'s log: " +
                                 cmd.err().message);
    }
    return std::move(*cmd);
}

group_replica::applied group_replica::apply(std::uint64_t index, std::uint64_t term,
                                            state::command&& cmd, std::size_t encoded_bytes) {
    _since_snapshot += encoded_bytes;
    applied out;
    std::string* key = state::command_key(cmd.body);
    out.append = std::holds_alternative<state::append>(cmd.body);
    std::uint64_t held_before = 0;
    const state::stream* live_before = nullptr;
    if (key != nullptr) {
        live_before = _state.find(*key);
        const state::stream* s = live_before != nullptr ? live_before : _state.find_any(*key);
        if (s != nullptr) held_before = s->hot_bytes_held();
    }
    const auto streams_before = static_cast<std::int64_t>(_state.stream_count());
    out.result = _state.apply(std::move(cmd), index);
    _applied_index = index;
    _applied_term = term;
    if (key == nullptr) {
        // A history rewrite may have replaced every stream (a restore).
        if (out.result.rewrote_history) recount(streams_before);
        return out;
    }
    // An append neither makes nor removes a stream: the live one it found
    // before is the one after, and a lookup fewer on the busiest path.
    out.stream = out.append ? live_before : _state.find(*key);
    const state::stream* held = out.stream != nullptr ? out.stream : _state.find_any(*key);
    const std::uint64_t held_after = held ? held->hot_bytes_held() : 0;
    _hot_bytes = _hot_bytes - held_before + held_after;
    report(static_cast<std::int64_t>(_state.stream_count()) - streams_before,
           static_cast<std::int64_t>(held_after) - static_cast<std::int64_t>(held_before));
    out.key = std::move(*key);  // the command is done with
    return out;
}

}  // namespace dstream::service
