#include "service/live_readers.h"

#include <optional>
#include <utility>

#include "service/service_metrics.h"

namespace dstream::service {
namespace {

using update_ptr = std::shared_ptr<const live_update>;

// The answers to one change's live readers: readers making the same request
// (nearly all of a stream's, at the same position) share one.
class answer_cache {
public:
    explicit answer_cache(live_source& source) : _source(source) {}

    const update_ptr& get(const read_request& request) {
        if (!_request || !(*_request == request)) {
            _answer = _source.live_answer(request);
            _request = request;
        }
        return _answer;
    }

private:
    live_source& _source;
    std::optional<read_request> _request;
    update_ptr _answer;
};

// Readers that left leave expired entries; drop them as the list grows.
template <typename Entry, typename Weak>
void add_pruning_expired(std::vector<Entry>& list, Entry entry, Weak Entry::*weak) {
    if (list.size() >= 64 && (list.size() & (list.size() - 1)) == 0) {
        std::erase_if(list, [weak](const Entry& e) { return (e.*weak).expired(); });
    }
    list.push_back(std::move(entry));
}

// One reader's share of a change: an update to offer (or none), and
// whether the subscription ends after it.
void run_offer(live_subscription& subscription, const update_ptr& update, bool end_after,
               service_metrics& metrics) {
    if (update) {
        const auto taken = subscription.offer(update);
        if (taken == live_subscription::offered::behind) metrics.live_readers_behind.inc();
        if (taken != live_subscription::offered::kept) {
            subscription.end();
            return;
        }
    }
    if (end_after) subscription.end();
}

// The shares of one lane, run there in one post. A change's update is held
// once for all of them: the lane's threads do not each count references to it.
struct offer_batch {
    struct job {
        std::shared_ptr<live_subscription> subscription;
        std::size_t update = none;  // an index into `updates`
        bool end_after = false;
    };
    static constexpr std::size_t none = static_cast<std::size_t>(-1);
    std::vector<update_ptr> updates;
    std::vector<job> jobs;

    void add(std::shared_ptr<live_subscription> subscription, const update_ptr& update,
             bool end_after) {
        std::size_t index = none;
        if (update) {
            if (updates.empty() || updates.back() != update) updates.push_back(update);
            index = updates.size() - 1;
        }
        jobs.push_back(job{std::move(subscription), index, end_after});
    }
    void run(service_metrics& metrics) const {
        static const update_ptr nothing;
        for (const auto& j : jobs) {
            run_offer(*j.subscription, j.update == none ? nothing : updates[j.update], j.end_after,
                      metrics);
        }
    }
};

}  // namespace

live_readers::live_readers(live_source& source, runtime::fanout_lanes& lanes,
                           service_metrics& metrics)
    : _source(source), _lanes(lanes), _metrics(metrics) {}

void live_readers::watch(const read_request& request, const std::shared_ptr<live_signal>& signal) {
    add_pruning_expired(_watches[request.key], watch_entry{request, signal}, &watch_entry::signal);
}

void live_readers::follow(read_request request,
                          const std::shared_ptr<live_subscription>& subscription) {
    auto& list = _followers[request.key];
    const std::size_t lane =
        list.size() < inline_readers ? no_lane : _lanes.assign(subscription->home());
    add_pruning_expired(list, follower{std::move(request), subscription, lane},
                        &follower::subscription);
}

void live_readers::changed(const std::string& key) {
    offer_followers(key);
    wake_watches(key);
}

void live_readers::wake_watches(const std::string& key) {
    auto it = _watches.find(key);
    if (it == _watches.end()) return;
    std::vector<watch_entry> woken = std::move(it->second);
    _watches.erase(it);
    answer_cache answers(_source);
    // A watch fires once, so its lane needs no order: the first few go from
    // here, the rest in one batch per lane.
    std::vector<std::vector<std::pair<std::shared_ptr<live_signal>, update_ptr>>> batches;
    std::size_t fired = 0;
    for (const auto& w : woken) {
        auto signal = w.signal.lock();
        if (!signal) continue;
        update_ptr update = _stopped ? nullptr : answers.get(w.request);
        if (fired++ < inline_readers) {
            signal->fire(std::move(update));
            continue;
        }
        if (batches.empty()) batches.resize(_lanes.size());
        batches[fired % _lanes.size()].emplace_back(std::move(signal), std::move(update));
    }
    for (std::size_t lane = 0; lane < batches.size(); ++lane) {
        if (batches[lane].empty()) continue;
        _lanes.post(lane, [batch = std::move(batches[lane])]() mutable {
            for (auto& [signal, update] : batch) signal->fire(std::move(update));
        });
    }
}

void live_readers::offer_followers(const std::string& key) {
    auto it = _followers.find(key);
    if (it == _followers.end()) return;
    std::vector<follower>& list = it->second;
    answer_cache answers(_source);
    std::vector<offer_batch> batches;
    const update_ptr nothing;
    const auto hand = [&](const follower& f, std::shared_ptr<live_subscription> subscription,
                          const update_ptr& update, bool end_after) {
        if (f.lane == no_lane) {
            run_offer(*subscription, update, end_after, _metrics);
            return;
        }
        if (batches.empty()) batches.resize(_lanes.size());
        batches[f.lane].add(std::move(subscription), update, end_after);
    };
    std::erase_if(list, [&](follower& f) {
        auto subscription = f.subscription.lock();
        // Ended: the reader left, or fell behind on its lane.
        if (!subscription || subscription->ended()) return true;
        if (_stopped) {
            hand(f, std::move(subscription), nothing, true);
            return true;
        }
        const update_ptr& answer = answers.get(f.request);
        if (!answer) {
            // Not shareable: the reader reads for itself.
            hand(f, std::move(subscription), nothing, true);
            return true;
        }
        const stream_view& view = answer->view();
        const bool last = view.refusal || view.reached_closed_tail();
        // A change without new bytes (a snapshot, a producer's state) sends nothing.
        if (view.next == f.request.start.position && !last) return false;
        hand(f, std::move(subscription), answer, last);
        if (last) return true;
        f.request.start.position = view.next;
        return false;
    });
    if (list.empty()) _followers.erase(it);
    for (std::size_t lane = 0; lane < batches.size(); ++lane) {
        if (batches[lane].jobs.empty()) continue;
        _lanes.post(lane, [batch = std::move(batches[lane]), &metrics = _metrics] {
            batch.run(metrics);
        });
    }
}

void live_readers::stop() {
    _stopped = true;
    while (!_watches.empty()) wake_watches(_watches.begin()->first);
    while (!_followers.empty()) offer_followers(_followers.begin()->first);
}

void live_readers::reset() {
    const bool stopped = std::exchange(_stopped, true);
    while (!_watches.empty()) wake_watches(_watches.begin()->first);
    while (!_followers.empty()) offer_followers(_followers.begin()->first);
    _stopped = stopped;
}

}  // namespace dstream::service
