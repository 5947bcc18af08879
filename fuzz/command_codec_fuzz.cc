// Log commands (state/command_codec) and the state machine that applies them,
// as WAL replay does: the input is a sequence of records (u16 length, bytes).
// A decoded command re-encodes to its own bytes (a version 1 record to the
// current version, stably), apply takes any decodable command the engine
// could have proposed without crashing, and the resulting state survives a
// checkpoint round trip.
//
// What the engine could have proposed: positions below 2^62. It never
// proposes a fork point, chunk, snapshot or retention offset past a stream's
// tail, and a tail would need 2^37 appends of the 32 MiB limit to get there;
// apply trusts that bound and does not check u64 overflow (found by this
// target: a fork at 2^64 - 1 wrapped its stream's tail).
#include <utility>
#include <type_traits>
#include <variant>

#include "checkpoint_bytes.h"
#include "state/command.h"
#include "state/group_state.h"

namespace {

using namespace dstream;
using fuzz::check;

constexpr std::uint8_t current_codec_version = 2;
constexpr std::uint64_t position_bound = std::uint64_t{1} << 62;

bool within_engine_bounds(const state::command& cmd) {
    return std::visit(
        [](const auto& c) {
            using T = std::decay_t<decltype(c)>;
            if constexpr (std::is_same_v<T, state::create_stream>) {
                return !c.fork || c.fork->offset < position_bound;
            } else if constexpr (std::is_same_v<T, state::flush_chunk>) {
                return c.end < position_bound;
            } else if constexpr (std::is_same_v<T, state::publish_snapshot>) {
                return c.offset < position_bound;
            } else if constexpr (std::is_same_v<T, state::retain> ||
                                 std::is_same_v<T, state::add_fork_ref>) {
                return c.offset < position_bound;
            } else {
                return true;
            }
        },
        cmd.body);
}

void check_round_trip(std::string_view bytes, const state::command& cmd) {
    const std::string encoded = state::encode_command(cmd);
    if (static_cast<std::uint8_t>(bytes[0]) == current_codec_version) {
        check(encoded == bytes, "a decoded command encodes to its own bytes");
        return;
    }
    auto again = state::decode_command(encoded);
    check(again.ok(), "an upgraded command decodes");
    check(state::encode_command(*again) == encoded, "an upgraded command encodes stably");
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string_view input = fuzz::as_text(data, size);
    state::group_state machine;
    std::uint64_t index = 0;
    while (input.size() >= 2) {
        const std::size_t length =
            static_cast<std::uint8_t>(input[0]) |
            (static_cast<std::size_t>(static_cast<std::uint8_t>(input[1])) << 8);
        input.remove_prefix(2);
        const std::string_view bytes = input.substr(0, length);
        input.remove_prefix(bytes.size());
        auto cmd = state::decode_command(bytes);
        if (!cmd) continue;
        check_round_trip(bytes, *cmd);
        if (within_engine_bounds(*cmd)) (void)machine.apply(std::move(*cmd), ++index);
    }
    check(fuzz::check_checkpoint_round_trip(
              fuzz::checkpoint_bytes(machine.capture_checkpoint(0, index))),
          "the state's checkpoint restores");
    return 0;
}
