#pragma once
// A group's state machine side on a simulated node: the server's parts
// (service::group_replica applies every committed entry from its bytes,
// service::group_leader proposes and answers each proposal with the apply
// of the entry committed at its index when its term matches), wired as
// service::group wires them, without the live readers, the cold tier and
// the sweep timer (real time). Every checkpoint_every applied entries the
// replica checkpoints its state, which becomes the log's snapshot.
#include <cstdint>
#include <memory>
#include <string_view>

#include "checker.h"
#include "log/group_log.h"
#include "runtime/clock.h"
#include "runtime/random.h"
#include "service/cold_tier.h"
#include "service/group_leader.h"
#include "service/group_reads.h"
#include "service/group_replica.h"
#include "trace.h"

namespace dstream::sim {

class sim_group final : private log::log_listener {
public:
    struct inputs {
        std::uint64_t node = 0;
        const runtime::clock& clock;
        runtime::random_source& random;
        service::group_strand strand;
        checker& check;
        const tracer& trace;
        unsigned checkpoint_every = 10;
        unsigned digest_every = 1;
    };
    sim_group(std::uint32_t id, inputs in);

    void attach_log(log::group_log& log);
    // Start-up: the state of the newest checkpoint.
    void restore(state::group_state state, std::uint64_t index, std::uint64_t term);
    // A client's write, proposed if this node leads; `done` gets the answer.
    void submit(state::command_body body, service::write_done done);

    const state::group_state& state() const { return _replica.state(); }
    std::uint64_t applied_index() const { return _replica.applied_index(); }
    // A digest of the encoded state as of the applied index.
    std::uint64_t digest() const;

private:
    // log::log_listener
    void committed(const log::committed_entry& entry) override;
    void committed_through(std::uint64_t index) override;
    void leadership_changed(const log::leadership& now) override;
    void proposals_lost(std::uint64_t from_index, const error& why) override;
    void install(std::uint64_t index, std::uint64_t term, std::string_view image) override;

    void maybe_checkpoint();

    std::uint32_t _id;
    inputs _in;
    service::cold_tier _cold;  // none: every byte stays hot
    service::group_replica _replica;
    service::group_reads _reads;
    service::group_leader _leader;
    log::group_log* _log = nullptr;
    std::uint64_t _since_checkpoint = 0;
    std::uint64_t _checkpoint_index = 0;
    bool _checkpointing = false;
    std::shared_ptr<int> _alive = std::make_shared<int>(0);
};

}  // namespace dstream::sim
