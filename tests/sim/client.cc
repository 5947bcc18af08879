#include "client.h"

#include <fmt/format.h>

#include "protocol/content_type.h"

namespace dstream::sim {
namespace {

constexpr std::size_t creating = static_cast<std::size_t>(-1);

bool retryable(protocol::error_code code) {
    // This node does not lead, the outcome is unknown (the leadership
    // changed), or its disk refused the write: the same write goes again.
    return code == protocol::error_code::no_leader ||
           code == protocol::error_code::outcome_unknown ||
           code == protocol::error_code::wal_disk_pressure;
}

}  // namespace

client::client(std::uint64_t id, client_kind kind, std::uint32_t group, std::string stream,
               event_queue& events, sim_random& rng, const sim_options& options, checker& check,
               const tracer& trace, cluster_access& cluster)
    : _id(id),
      _kind(kind),
      _group(group),
      _stream(std::move(stream)),
      _events(events),
      _rng(rng),
      _options(options),
      _check(check),
      _trace(trace),
      _cluster(cluster) {}

std::string client::tag() const {
    switch (_kind) {
        case client_kind::producer:
            return "p" + std::to_string(_id);
        case client_kind::closer:
            return "k" + std::to_string(_id);
        case client_kind::plain:
            break;
    }
    return "a" + std::to_string(_id);
}

std::string client::describe() const {
    std::string what = _created ? fmt::format("{} writes", _writes.size()) : "creating";
    if (!_writes.empty() && _writes.back().acks.empty()) {
        what += fmt::format(", #{} unanswered after {} attempts", _writes.size() - 1,
                            _writes.back().attempts);
    }
    return fmt::format("client {} ({}) on g{} {}: {}{}", _id, tag(), _group, _stream, what,
                       _done ? ", done" : "");
}

void client::start() {
    _target = random_node();
    _events.after(_rng.between(0, 50), [this] { send(); });
}

void client::finish() {
    _finishing = true;
}

state::command_body client::body_of(const write& w) const {
    state::append a;
    a.key = _stream;
    a.content_type = std::string(protocol::default_content_type);
    a.body = w.body;
    a.close = w.close;
    if (_kind != client_kind::plain) a.producer = state::producer_key{producer_id(), 0, w.seq, {}};
    return a;
}

void client::send() {
    const std::uint64_t attempt = ++_attempt;
    const std::size_t index = _created ? _writes.size() - 1 : creating;
    state::command_body body;
    if (index == creating) {
        state::create_stream c;
        c.key = _stream;
        c.content_type = std::string(protocol::default_content_type);
        body = std::move(c);
    } else {
        ++_writes[index].attempts;
        body = body_of(_writes[index]);
    }
    const bool sent = _cluster.submit(
        _target, _group, std::move(body),
        [this, attempt, index](state::apply_result r) { answered(attempt, index, r); });
    if (!sent) {
        retry(_rng.between(5, 50), 0);  // no connection: another node
        return;
    }
    _events.after(_options.attempt_timeout_ms, [this, attempt] {
        if (attempt == _attempt && !_done) {
            _trace("client {}: attempt {} timed out at n{}", _id, attempt, _target);
            retry(0, 0);
        }
    });
}

void client::retry(std::uint64_t backoff_ms, std::uint64_t hint_from) {
    ++_attempt;  // the attempt in flight is no longer waited for
    std::uint64_t target = 0;
    if (hint_from != 0) {
        const std::uint64_t hint = _cluster.leader_hint(hint_from, _group);
        if (hint != 0 && hint != hint_from) target = hint;
    }
    _target = target != 0 ? target : random_node();
    _events.after(backoff_ms, [this] { send(); });
}

void client::answered(std::uint64_t attempt, std::size_t index, const state::apply_result& r) {
    const bool current = attempt == _attempt;
    if (r.refusal) {
        if (!retryable(r.refusal->code)) {
            _check.fail("client answer",
                        fmt::format("client {} ({}): write {} refused: {}", _id, tag(),
                                    index == creating ? std::string("create") : std::to_string(index),
                                    r.refusal->message));
            return;
        }
        if (current) retry(_rng.between(1, 60), _target);
        return;
    }
    if (index == creating) {
        if (r.kind != state::write_kind::created && r.kind != state::write_kind::already_exists) {
            _check.fail("client answer", fmt::format("client {}: a create answered as a write", _id));
            return;
        }
        if (_created) return;  // a late answer of an earlier attempt
        _created = true;
        _trace("client {}: created {}", _id, _stream);
        next();
        return;
    }
    write& w = _writes[index];
    const bool fresh = w.acks.empty();
    if ((r.kind != state::write_kind::appended && r.kind != state::write_kind::repeated) ||
        r.receipt_evicted || (_kind != client_kind::plain && !r.producer_write)) {
        _check.fail("client answer",
                    fmt::format("client {} ({}): write {} answered as kind {}{}", _id, tag(), index,
                                static_cast<int>(r.kind), r.receipt_evicted ? " (evicted)" : ""));
        return;
    }
    w.acks.emplace_back(r.start_offset, r.next_offset);
    _trace("client {}: write {} acknowledged ({}) at [{}, {})", _id, index,
           r.kind == state::write_kind::repeated ? "repeat" : "applied", r.start_offset,
           r.next_offset);
    if (fresh && index == _writes.size() - 1) next();
}

void client::next() {
    ++_attempt;
    const bool closed = !_writes.empty() && _writes.back().close;
    if (closed || (_finishing && _kind != client_kind::closer)) {
        _done = true;
        return;
    }
    write w;
    w.seq = _writes.size();
    w.body = fmt::format("{}.{}\n", tag(), w.seq);
    w.close = _finishing && _kind == client_kind::closer;
    _writes.push_back(std::move(w));
    _events.after(_rng.between(0, _options.think_max_ms), [this] { send(); });
}

}  // namespace dstream::sim
