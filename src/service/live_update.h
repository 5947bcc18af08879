#pragma once
// What a group hands to the live readers waiting at one position of a stream
// when it changes: the read they would each make next, made once at apply
// time, and its renderings, made once by the first reader that needs each.
#include <array>
#include <chrono>
#include <cstddef>
#include <mutex>
#include <string>
#include <utility>

#include "service/stream_service.h"

namespace dstream::service {

class live_update {
public:
    // The data event in each of the edge's four formats, the control event,
    // and the two together as the edge sends them, in each format.
    static constexpr std::size_t rendering_slots = 9;

    explicit live_update(stream_view view) : _view(std::move(view)) {}

    const stream_view& view() const { return _view; }
    // When the group made it, right after the change was applied: the start
    // of the delivery latency the edge reports.
    std::chrono::steady_clock::time_point made_at() const { return _made_at; }

    // The rendering `slot` of the view (the caller numbers its formats),
    // made by `render(view)` the first time; any thread. Once made, a
    // rendering is read without a lock (a thousand readers read each).
    template <typename Render>
    const std::string& rendering(std::size_t slot, Render&& render) const {
        std::call_once(_made.at(slot),
                       [&] { _renderings[slot] = std::forward<Render>(render)(_view); });
        return _renderings[slot];
    }

private:
    const stream_view _view;
    const std::chrono::steady_clock::time_point _made_at = std::chrono::steady_clock::now();
    mutable std::array<std::once_flag, rendering_slots> _made;
    mutable std::array<std::string, rendering_slots> _renderings;
};

}  // namespace dstream::service
