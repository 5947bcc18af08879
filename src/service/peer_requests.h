#pragma once
// What a cluster's node asks a replica of a group it holds none of (more
// nodes than `replicas`): a fork's source read on the fork's behalf (its
// view, the bytes the fork inherits) and a command for that group's leader
// (a fork's reference and its release). The replica answers once caught up
// with the group's leader, so the answer is as current as the leader's. The
// requests travel on the peer transport's node channel (cli/cluster_reads);
// a single node asks nothing.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "base/result.h"
#include "base/unique_function.h"
#include "service/group_reads.h"

namespace dstream::service {

struct peer_request {
    enum class kind : std::uint8_t { fork_source = 1, read_source = 2, propose = 3 } what =
        kind::fork_source;
    std::uint64_t id = 0;    // the asker's, echoed by the answer
    std::uint64_t from = 0;  // the asking node
    std::uint32_t group = 0;
    std::string key;                  // fork_source, read_source: the source
    std::uint64_t incarnation = 0;    // read_source: the source's, as the fork names it
    std::uint64_t start = 0;          // read_source: the first byte
    std::uint64_t max_bytes = 0;      // read_source
    std::string command;              // propose: an encoded command (state/command_codec.h)
};

struct peer_answer {
    std::uint64_t id = 0;
    std::optional<error> refusal;
    fork_source_view source;   // fork_source
    std::uint64_t next = 0;    // read_source: the offset after `bytes`
    std::uint64_t tail = 0;    // read_source: the source's tail
    std::string bytes;         // read_source
};

// The most a read_source answer carries: the asker reads on from `next`.
inline constexpr std::uint64_t peer_read_max_bytes = std::uint64_t{4} << 20;

std::string encode(const peer_request& r);
std::string encode(const peer_answer& a);
// What a node-channel message holds: a request or an answer, or nothing
// when it is malformed.
struct peer_message {
    std::optional<peer_request> request;
    std::optional<peer_answer> answer;
};
peer_message decode_peer_message(std::string_view bytes);

// Where the engine sends its requests; `done` gets the answer, or a refusal
// (NO_LEADER) when no replica answered in time. Any thread.
class peer_reads {
public:
    virtual ~peer_reads() = default;
    virtual void ask(peer_request request, unique_function<void(peer_answer)> done) = 0;
};

}  // namespace dstream::service
