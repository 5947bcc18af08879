#pragma once
// What every replica of a group does: applies the committed commands of its
// log to the state machine, in index order, from their encoded bytes (the
// one apply path, live and at replay), and keeps the node's accounting of
// streams and hot bytes in step. Runs on the group's strand.
#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

#include "state/group_state.h"

namespace dstream::service {

struct service_metrics;

class group_replica {
public:
    group_replica(std::uint32_t id, service_metrics& metrics);

    // Start-up: the state of a checkpoint (or a leader's snapshot) as of
    // `index` of `term`, replacing whatever was there.
    void restore(state::group_state state, std::uint64_t index, std::uint64_t term);
    // What applying one command did.
    struct applied {
        state::apply_result result;
        std::string key;  // the stream it addressed; empty for a group command
        // That stream if it lives on after the apply; valid until the next one.
        const state::stream* stream = nullptr;
        bool append = false;
    };
    // The committed command at `index`, decoded; throws on bytes that do not
    // decode (a log it cannot trust).
    state::command decode(std::uint64_t index, std::string_view bytes) const;
    // Applies `cmd`, decoded from the `encoded_bytes` bytes at `index`.
    applied apply(std::uint64_t index, std::uint64_t term, state::command&& cmd,
                  std::size_t encoded_bytes);

    const state::group_state& state() const { return _state; }
    std::uint32_t id() const { return _id; }
    std::uint64_t applied_index() const { return _applied_index; }
    std::uint64_t applied_term() const { return _applied_term; }
    // Bytes above every stream's cold frontier.
    std::uint64_t hot_bytes() const { return _hot_bytes; }
    // Encoded log bytes applied since the last snapshot was taken.
    std::uint64_t applied_bytes_since_snapshot() const { return _since_snapshot; }
    void snapshot_taken() { _since_snapshot = 0; }

    // The state as of the applied index, without copying stream bytes.
    state::checkpoint_image capture() const { return _state.capture_checkpoint(_id, _applied_index); }

private:
    // Moves the node-wide totals by this group's changes.
    void report(std::int64_t streams_delta, std::int64_t hot_bytes_delta);
    // Counts the hot bytes of the whole state again (it was replaced), and
    // reports the change from `streams_before` streams.
    void recount(std::int64_t streams_before);

    std::uint32_t _id;
    service_metrics& _metrics;
    state::group_state _state;
    std::uint64_t _applied_index = 0;
    std::uint64_t _applied_term = 0;
    std::uint64_t _hot_bytes = 0;
    std::uint64_t _since_snapshot = 0;
};

}  // namespace dstream::service
