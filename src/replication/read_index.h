#pragma once
// The read index of a follower (Raft dissertation 6.4), carried beside the
// group's Raft messages: a follower asks the leader for its commit index; the
// leader answers once a confirmation round proved it still leads, and the
// follower serves the read once it applied that far.
//
// Its messages share the group's transport with libraft's. The shim's
// messages start with their format byte 1 (raft/raft_core.c); these start
// with 2, so the receiver tells them apart by the first byte alone.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace dstream::replication {

inline constexpr std::uint8_t read_index_format = 2;
// A follower's note for the leader (log::group_log::tell_leader): this byte,
// then the note.
inline constexpr std::uint8_t leader_note_format = 3;
// 4: a forwarded proposal and its answer (forwarded_proposal.h).

struct read_index_message {
    enum class kind : std::uint8_t { request = 1, granted = 2, refused = 3 } what = kind::request;
    std::uint64_t id = 0;     // the follower's, echoed by the answer
    std::uint64_t from = 0;   // the sender's node id
    std::uint64_t index = 0;  // granted: the commit index the leader confirmed
};

bool is_read_index_message(std::string_view bytes);
std::string encode(const read_index_message& m);
// Nothing for bytes that are not a well-formed read index message.
std::optional<read_index_message> decode_read_index(std::string_view bytes);

}  // namespace dstream::replication
