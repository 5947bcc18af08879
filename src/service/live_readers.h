#pragma once
// The live readers of one group's streams: long-polls waiting for a change
// (one-shot watches) and SSE readers following every change
// (live_subscription). What every replica does: after a change is applied,
// changed(key) hands each reader of the stream the read it would make next,
// made once for all readers making the same one (live_source). Runs on the
// group's strand; the hand-offs to many readers go out through the fan-out
// lanes, so the group's strand, and the proposer waiting for its answer,
// never wait on the readers (runtime/fanout_lanes.h).
#include <memory>
#include <string>
#include <unordered_map>
#include <vector>

#include "runtime/fanout_lanes.h"
#include "runtime/wake_signal.h"
#include "service/live_subscription.h"
#include "service/live_update.h"
#include "service/stream_service.h"

namespace dstream::service {

// Wakes a live reader with the read it waits for, or with nothing when it
// must read for itself.
using live_signal = runtime::wake_signal<std::shared_ptr<const live_update>>;

struct service_metrics;

// The group's side: the read `request` makes next, when it reaches the tail
// from hot bytes alone and so can be handed to every reader making the same
// one; null when the reader must read for itself.
class live_source {
public:
    virtual ~live_source() = default;
    virtual std::shared_ptr<const live_update> live_answer(const read_request& request) = 0;
};

class live_readers {
public:
    // Up to this many readers of one stream are handed their update on the
    // group's strand itself; the rest go through the lanes.
    static constexpr std::size_t inline_readers = 8;

    live_readers(live_source& source, runtime::fanout_lanes& lanes, service_metrics& metrics);

    // A long-poll at `request`'s position, which has nothing yet (the group
    // checked): fired at the stream's next change.
    void watch(const read_request& request, const std::shared_ptr<live_signal>& signal);
    // An SSE reader at `request`'s position, offered every change from there
    // until it leaves, falls behind or must read for itself.
    void follow(read_request request, const std::shared_ptr<live_subscription>& subscription);
    // The stream `key` changed: wakes its watches, offers its followers.
    void changed(const std::string& key);
    // Shutdown: every reader is woken empty-handed, and later ones refused.
    void stop();
    // Every stream may have changed (a leader's snapshot replaced the
    // state): every reader is woken empty-handed and reads for itself.
    void reset();
    bool stopped() const { return _stopped; }

private:
    struct watch_entry {
        read_request request;
        std::weak_ptr<live_signal> signal;
    };
    struct follower {
        read_request request;  // its position: where the next update starts
        std::weak_ptr<live_subscription> subscription;
        std::size_t lane = 0;  // its updates' lane; no_lane: the group's strand
    };
    static constexpr std::size_t no_lane = static_cast<std::size_t>(-1);
    void wake_watches(const std::string& key);
    void offer_followers(const std::string& key);

    live_source& _source;
    runtime::fanout_lanes& _lanes;
    service_metrics& _metrics;
    std::unordered_map<std::string, std::vector<watch_entry>> _watches;
    std::unordered_map<std::string, std::vector<follower>> _followers;
    bool _stopped = false;
};

}  // namespace dstream::service
