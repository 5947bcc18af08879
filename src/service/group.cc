#include "service/group.h"

#include <algorithm>
#include <random>
#include <stdexcept>

#include "runtime/clock.h"

namespace dstream::service {
namespace {

using protocol::error_code;

constexpr auto sweep_interval = std::chrono::seconds(5);

const std::string* key_of(const state::command_body& body) {
    return std::visit(
        [](const auto& c) -> const std::string* {
            if constexpr (requires { c.key; }) {
                return &c.key;
            } else {
                return nullptr;
            }
        },
        body);
}

}  // namespace

void group::attach_log(std::unique_ptr<log::command_log> log) {
    _log = std::move(log);
    _log->on_durable([this](std::uint64_t index, status st) { on_durable(index, st); });
}

void group::replay(std::uint64_t index, std::string_view record) {
    auto cmd = state::decode_command(record);
    if (!cmd) {
        throw std::runtime_error("undecodable command at index " + std::to_string(index) +
                                 " of a group's log: " + cmd.err().message);
    }
    (void)_state.apply(*cmd, index);
}

void group::start() {
    if (_state.history_id() == 0) {
        std::random_device rd;
        std::uint64_t id = 0;
        while (id == 0) id = (std::uint64_t{rd()} << 32) ^ rd();
        append_to_log(state::command{runtime::now_unix_ms(), state::init_group{id}}, {});
    }
    schedule_sweep();
}

void group::schedule_sweep() {
    _sweep_timer.expires_after(sweep_interval);
    _sweep_timer.async_wait([this](boost::system::error_code ec) {
        if (ec) return;
        const auto now = runtime::now_unix_ms();
        std::vector<std::string> due;
        _state.for_each_stream([&](const std::string& key, const state::stream& s) {
            if (lifetime_over(key, s, now)) due.push_back(key);
        });
        for (const auto& key : due) live_stream(key, now);
        schedule_sweep();
    });
}

bool group::lifetime_over(const std::string& key, const state::stream& s,
                          protocol::unix_ms now) const {
    if (s.expiry.expires_at) return now >= *s.expiry.expires_at;
    if (s.expiry.ttl_seconds) {
        protocol::unix_ms last = s.last_write_ms;
        if (auto it = _last_read_ms.find(key); it != _last_read_ms.end()) {
            last = std::max(last, it->second);
        }
        return now >= last + static_cast<protocol::unix_ms>(*s.expiry.ttl_seconds) * 1000;
    }
    return false;
}

const state::stream* group::live_stream(const std::string& key, protocol::unix_ms now) {
    const state::stream* s = _state.find(key);
    if (s == nullptr || !lifetime_over(key, *s, now)) return s;
    if (_expiring.insert(key).second) {
        append_to_log(state::command{now, state::expire_stream{key, s->incarnation}}, {});
    }
    return nullptr;
}

void group::propose(state::command_body body, write_done done) {
    const auto now = runtime::now_unix_ms();
    if (const std::string* key = key_of(body)) live_stream(*key, now);
    append_to_log(state::command{now, std::move(body)}, std::move(done));
}

void group::append_to_log(state::command cmd, write_done done) {
    const std::uint64_t index = _log->append(state::encode_command(cmd));
    _pending.push_back(pending_entry{index, std::move(cmd), std::move(done)});
}

void group::on_durable(std::uint64_t index, const status& st) {
    while (!_pending.empty() && _pending.front().index <= index) {
        pending_entry entry = std::move(_pending.front());
        _pending.pop_front();
        if (!st) {
            if (entry.done) {
                state::apply_result refused;
                refused.refusal = st.err();
                entry.done(std::move(refused));
            }
            continue;
        }
        state::apply_result r = _state.apply(entry.cmd, entry.index);
        if (const std::string* key = key_of(entry.cmd.body)) {
            if (r.wakes_readers) wake_readers(*key);
            if (_state.find(*key) == nullptr) {
                _last_read_ms.erase(*key);
                _expiring.erase(*key);
            }
        }
        if (entry.done) entry.done(std::move(r));
    }
}

void group::wake_readers(const std::string& key) {
    auto it = _watchers.find(key);
    if (it == _watchers.end()) return;
    for (auto& weak : it->second) {
        if (auto signal = weak.lock()) signal->fire();
    }
    _watchers.erase(it);
}

bool group::watch(const std::string& key, std::uint64_t incarnation, std::uint64_t offset,
                  const std::shared_ptr<runtime::wake_signal>& signal) {
    const state::stream* s = live_stream(key, runtime::now_unix_ms());
    if (s == nullptr || s->incarnation != incarnation || s->tail() > offset || s->closed) {
        return false;
    }
    auto& list = _watchers[key];
    // Readers that timed out leave expired entries; drop them as the list grows.
    if (list.size() >= 64 && (list.size() & (list.size() - 1)) == 0) {
        std::erase_if(list, [](const auto& w) { return w.expired(); });
    }
    list.push_back(signal);
    return true;
}

stream_view group::read(const read_request& request) {
    stream_view view;
    const auto now = runtime::now_unix_ms();
    const state::stream* s = live_stream(request.key, now);
    if (s == nullptr) {
        view.refusal = make_error(error_code::stream_not_found, "stream not found");
        return view;
    }
    view.incarnation = s->incarnation;
    view.content_type = s->content_type;
    view.json = s->json;
    view.expiry = s->expiry;
    view.stream_closed = s->closed;
    view.tail = s->tail();

    std::uint64_t start = s->first_offset();
    switch (request.start.where) {
        case protocol::read_start::kind::beginning:
            break;
        case protocol::read_start::kind::now:
            start = s->tail();
            break;
        case protocol::read_start::kind::position:
            start = request.start.position;
            if (start < s->first_offset()) {
                view.refusal = make_error(error_code::stream_gone,
                                          "offset is below the earliest retained offset");
                return view;
            }
            if (start > s->tail()) {
                view.refusal = make_error(error_code::offset_out_of_range,
                                          "offset is beyond the stream's tail");
                return view;
            }
            break;
    }
    if (request.if_incarnation && *request.if_incarnation != s->incarnation) {
        view.refusal = make_error(error_code::incarnation_mismatch,
                                  "Stream-Incarnation does not match the stream");
        return view;
    }
    if (request.renews_ttl) _last_read_ms[request.key] = now;

    view.start = start;
    view.next = start;
    if (request.max_bytes == 0 || start == s->tail()) return view;

    std::uint64_t end = std::min(s->tail(), start + request.max_bytes);
    if (request.whole_messages && s->json && end < s->tail()) {
        // End on a message boundary; a message larger than the cap goes whole.
        std::uint64_t e = end;
        while (e > start && s->bytes.byte_at(e - 1) != '\n') --e;
        if (e == start) {
            e = end;
            while (e < s->tail() && s->bytes.byte_at(e - 1) != '\n') ++e;
        }
        end = e;
    }
    view.next = s->bytes.read(start, end - start, view.data);
    return view;
}

}  // namespace dstream::service
