#pragma once
// A proposal a follower asks the group's leader to make for it
// (log::group_log::forward), and the leader's answer: what its propose() made
// of it. Carried beside the group's Raft messages, format byte 4 (see
// read_index.h for the others).
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "log/group_log.h"

namespace dstream::replication {

inline constexpr std::uint8_t forwarded_proposal_format = 4;

struct forwarded_proposal {
    enum class kind : std::uint8_t { request = 1, answer = 2 } what = kind::request;
    std::uint64_t id = 0;    // the follower's, echoed by the answer
    std::uint64_t from = 0;  // the sender's node id
    std::string command;     // request: the encoded command
    log::proposal answer;    // answer: the leader's proposal of it
};

bool is_forwarded_proposal(std::string_view bytes);
std::string encode(const forwarded_proposal& m);
// Nothing for bytes that are not a well-formed forwarded proposal message.
std::optional<forwarded_proposal> decode_forwarded_proposal(std::string_view bytes);

}  // namespace dstream::replication
