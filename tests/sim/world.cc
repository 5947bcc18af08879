#include "world.h"

#include <algorithm>
#include <utility>

#include <fmt/format.h>

#include "group_disk.h"
#include "replication/raft/raft_core.h"

namespace dstream::sim {

world::world(std::uint64_t seed, bool verbose, bool trace_messages)
    : _rng(seed),
      _options(sim_options::draw(seed, _rng)),
      _trace(_events, verbose),
      _check(_events, _trace),
      _net(_events, _rng, _options, _trace,
           [this](std::uint64_t from, std::uint64_t to, std::uint32_t group,
                  std::string_view bytes) { deliver(from, to, group, bytes); },
           [this](std::uint64_t from, std::string_view bytes) { sent(from, bytes); },
           [this](std::uint64_t id) { return node(id).up(); }) {
    _options.verbose = verbose;
    _options.trace_messages = trace_messages;
    const world_services services{_events, _rng, _options, _trace, _check, _net, _io};
    for (unsigned n = 1; n <= _options.nodes; ++n) {
        _nodes.push_back(std::make_unique<sim_node>(n, services));
    }
    std::uint64_t id = 1;
    for (std::uint32_t g = 0; g < _options.groups; ++g) {
        for (unsigned i = 0; i < _options.clients_per_group; ++i, ++id) {
            // One closer with a stream of its own; the others share one,
            // the last of three or more without a producer.
            const client_kind kind = i == 0 ? client_kind::closer
                                     : i >= 2 && i + 1 == _options.clients_per_group
                                         ? client_kind::plain
                                         : client_kind::producer;
            std::string stream = kind == client_kind::closer ? fmt::format("g{}/own{}", g, id)
                                                             : fmt::format("g{}/shared", g);
            _clients.push_back(std::make_unique<client>(id, kind, g, std::move(stream), _events,
                                                        _rng, _options, _check, _trace, *this));
        }
    }
}

world::~world() {
    // The nodes' parts hold the clients' answers: they go first.
    _nodes.clear();
}

void world::step() {
    try {
        _events.step();
        _io.restart();
        _io.poll();
    } catch (const std::exception& e) {
        _check.fail("exception", e.what());
    }
}

run_result world::run() {
    _trace("seed {}: {}", _options.seed, _options.describe());
    try {
        for (auto& n : _nodes) n->start();
    } catch (const std::exception& e) {
        _check.fail("exception", e.what());
    }
    for (auto& c : _clients) c->start();
    _events.after(_options.fault_period_ms, [this] { fault_tick(); });
    _events.at(_options.run_ms, [this] { heal(); });

    const std::uint64_t deadline = std::uint64_t{_options.run_ms} + _options.settle_ms;
    bool settled_now = false;
    std::uint64_t next_settle_check = _options.run_ms;
    while (!_check.failed()) {
        if (_healed && _events.now() >= next_settle_check) {
            next_settle_check = _events.now() + 20;
            if (settled(nullptr)) {
                settled_now = true;
                break;
            }
        }
        if (_events.now() > deadline) {
            std::string why;
            settled(&why);
            _check.fail("liveness", fmt::format("not settled {} ms after healing: {}",
                                                _options.settle_ms, why));
            break;
        }
        if (_events.empty()) {
            _check.fail("liveness", "nothing left to happen");
            break;
        }
        step();
    }
    if (settled_now) final_checks();

    run_result out;
    out.ok = !_check.failed();
    out.failure = _check.failure();
    out.virtual_ms = _events.now();
    out.messages = _net.sent();
    out.net = _net.count();
    for (const auto& c : _clients) {
        for (const auto& w : c->writes()) out.acknowledged += w.acks.empty() ? 0 : 1;
    }
    out.crashes = _crashes;
    out.leaders = _check.leaders_seen();
    out.states_compared = _check.states_compared();
    out.counted = _check.count();
    return out;
}

bool world::submit(std::uint64_t id, std::uint32_t group, state::command_body body,
                   std::function<void(state::apply_result)> done) {
    sim_node& n = node(id);
    if (!n.up()) return false;
    n.group(group).submit(std::move(body),
                          [done = std::move(done)](state::apply_result r) { done(std::move(r)); });
    return true;
}

std::uint64_t world::leader_hint(std::uint64_t id, std::uint32_t group) {
    sim_node& n = node(id);
    return n.up() ? n.log(group).current().leader : 0;
}

void world::deliver(std::uint64_t /*from*/, std::uint64_t to, std::uint32_t group,
                    std::string_view bytes) {
    node(to).receive(group, bytes);
}

void world::sent(std::uint64_t from, std::string_view bytes) {
    if (_healed) return;
    int type = 0;
    std::uint64_t sender = 0, to = 0;
    if (raft_core_message_peek(bytes.data(), bytes.size(), &type, &sender, &to) != 0) return;
    const double chance = type == RAFT_CORE_REQUEST_VOTE_RESULT     ? _options.crash_after_vote
                          : type == RAFT_CORE_APPEND_ENTRIES_RESULT ? _options.crash_after_answer
                                                                    : 0.0;
    if (!_rng.chance(chance)) return;
    const std::uint64_t incarnation = node(from).incarnation();
    _events.after(_rng.between(0, 5), [this, from, incarnation] {
        sim_node& n = node(from);
        if (!n.up() || n.incarnation() != incarnation || !may_crash()) return;
        _trace("n{}: crashes right after an answer", from);
        crash(n);
    });
}

bool world::may_crash() const {
    std::size_t down = 0;
    for (const auto& n : _nodes) down += n->up() ? 0 : 1;
    return !_healed && (_options.crash_any || down + 1 <= (_nodes.size() - 1) / 2);
}

void world::fault_tick() {
    if (_healed) return;
    if (_rng.chance(_options.crash)) {
        std::vector<sim_node*> up;
        for (auto& n : _nodes) {
            if (n->up()) up.push_back(n.get());
        }
        if (!up.empty() && may_crash()) crash(*up[_rng.between(0, up.size() - 1)]);
    }
    if (!_net.partitioned() && _rng.chance(_options.partition)) {
        std::vector<int> side(_nodes.size() + 1, 0);
        // Both sides hold a node: node 1 on one, a random other on the other.
        for (std::size_t n = 2; n <= _nodes.size(); ++n) side[n] = _rng.chance(0.5) ? 1 : 0;
        side[_rng.between(2, _nodes.size())] = 1;
        std::string left, right;
        for (std::size_t n = 1; n <= _nodes.size(); ++n) {
            (side[n] == 0 ? left : right) += fmt::format(" n{}", n);
        }
        _trace("partition:{} |{}", left, right);
        _net.partition(std::move(side));
        _events.after(_rng.between(50, _options.partition_max_ms), [this] {
            if (_healed || !_net.partitioned()) return;
            _trace("partition heals");
            _net.heal_partition();
        });
    }
    if (_rng.chance(0.05)) {
        // An operator hands a group's leadership on.
        const auto g = static_cast<std::uint32_t>(_rng.between(0, _options.groups - 1));
        for (auto& n : _nodes) {
            if (n->up() && n->log(g).current().leads()) {
                _trace("n{} g{}: transfers its leadership", n->id(), g);
                n->log(g).transfer(0);
                break;
            }
        }
    }
    // Drawn only in the transport mode: a lossy seed's draws do not depend on it.
    if (_options.transport) transport_faults();
    _events.after(_options.fault_period_ms, [this] { fault_tick(); });
}

void world::transport_faults() {
    const std::uint64_t n = _nodes.size();
    // Two distinct nodes.
    const auto two = [this, n] {
        const std::uint64_t a = _rng.between(1, n);
        std::uint64_t b = _rng.between(1, n - 1);
        if (b >= a) ++b;
        return std::pair{std::min(a, b), std::max(a, b)};
    };
    if (_rng.chance(_options.reset)) {
        const auto [a, b] = two();
        _net.reset(a, b);
    }
    if (!_net.one_way_cut() && _rng.chance(_options.one_way)) {
        // One node and some of the others: the packets one way between them
        // are lost (a firewall rule per direction), the other way flow.
        const std::uint64_t x = _rng.between(1, n);
        std::vector<bool> in(n + 1, false);
        for (std::uint64_t o = 1; o <= n; ++o) in[o] = o != x && _rng.chance(0.5);
        std::uint64_t forced = _rng.between(1, n - 1);
        if (forced >= x) ++forced;
        in[forced] = true;
        const bool outgoing = _rng.chance(0.5);
        std::vector<std::pair<std::uint64_t, std::uint64_t>> cuts;
        std::string others;
        for (std::uint64_t o = 1; o <= n; ++o) {
            if (!in[o]) continue;
            cuts.emplace_back(outgoing ? x : o, outgoing ? o : x);
            others += fmt::format(" n{}", o);
        }
        if (outgoing) {
            _trace("one-way partition: n{} ->{} cut ({} -> n{} flows)", x, others,
                   others.substr(1), x);
        } else {
            _trace("one-way partition:{} -> n{} cut (n{} ->{} flows)", others, x, x, others);
        }
        _net.one_way(cuts);
        _events.after(_rng.between(50, _options.partition_max_ms), [this] {
            if (_healed || !_net.one_way_cut()) return;
            _trace("one-way partition heals");
            _net.heal_one_way();
        });
    }
    if (_rng.chance(_options.slow_link)) {
        const auto [a, b] = two();
        const std::uint64_t extra = _rng.between(_options.slow_link_ms / 2, _options.slow_link_ms);
        const std::uint64_t lasts = _rng.between(100, _options.slow_link_max_ms);
        _trace("n{} <-> n{}: a slow link, +{} ms for {} ms", a, b, extra, lasts);
        _net.slow(a, b, extra, lasts);
    }
}

void world::crash(sim_node& n) {
    ++_crashes;
    n.crash();
    _net.crashed(n.id());
    const std::uint64_t id = n.id();
    const std::uint64_t incarnation = n.incarnation();
    _events.after(_rng.between(_options.down_min_ms, _options.down_max_ms),
                  [this, id, incarnation] { restart(id, incarnation); });
}

void world::restart(std::uint64_t id, std::uint64_t incarnation) {
    sim_node& n = node(id);
    if (n.up() || n.incarnation() != incarnation) return;
    n.start();
    _net.started(id);
}

void world::heal() {
    _healed = true;
    _trace("heal: the network and the disks are sound, every node is up");
    _net.heal();
    _net.set_faults(false);
    for (auto& n : _nodes) n->disk().set_faults(false);
    for (auto& n : _nodes) {
        if (n->up()) continue;
        n->start();
        _net.started(n->id());
    }
    for (auto& c : _clients) c->finish();
}

bool world::settled(std::string* why) {
    const auto say = [why](const std::string& what) {
        if (why != nullptr) *why += what + "; ";
    };
    bool ok = true;
    for (const auto& c : _clients) {
        if (!c->done()) {
            say(c->describe());
            ok = false;
        }
    }
    for (std::uint32_t g = 0; g < _options.groups; ++g) {
        // The leader of the highest term.
        sim_node* leader = nullptr;
        for (auto& n : _nodes) {
            if (!n->up() || !n->log(g).current().leads()) continue;
            if (leader == nullptr || n->log(g).current().term > leader->log(g).current().term) {
                leader = n.get();
            }
        }
        if (leader == nullptr) {
            say(fmt::format("g{} has no leader", g));
            ok = false;
            continue;
        }
        const auto& lr = leader->log(g).replica();
        for (auto& n : _nodes) {
            const auto& r = n->log(g).replica();
            const log::leadership who = r.leadership();
            if (who.term != lr.leadership().term || who.leader != leader->id() ||
                r.applied_index() != lr.last_index() || lr.commit_index() != lr.last_index()) {
                say(fmt::format("g{} n{}: term {} leader n{} commit {} applied {} last {} (leader "
                                "n{}: term {} commit {} last {})",
                                g, n->id(), who.term, who.leader, r.commit_index(),
                                r.applied_index(), r.last_index(), leader->id(),
                                lr.leadership().term, lr.commit_index(), lr.last_index()));
                ok = false;
            }
        }
    }
    return ok;
}

void world::final_checks() {
    for (std::uint32_t g = 0; g < _options.groups && !_check.failed(); ++g) {
        std::string first;
        for (auto& n : _nodes) {
            const std::string bytes = state::sealed_checkpoint_bytes(n->group(g).state().capture_checkpoint(
                g, n->group(g).applied_index()));
            if (first.empty()) {
                first = bytes;
            } else if (bytes != first) {
                _check.fail("identical applied state",
                            fmt::format("g{}: n{} ends with a state that differs from n1's", g,
                                        n->id()));
                return;
            }
        }
        for (auto& n : _nodes) check_streams(*n, g);
    }
}

void world::check_streams(sim_node& n, std::uint32_t group) {
    const state::group_state& st = n.group(group).state();
    for (const auto& c : _clients) {
        if (c->group() != group || _check.failed()) continue;
        const state::stream* s = st.find(c->stream());
        if (s == nullptr) {
            _check.fail("acknowledged write lost",
                        fmt::format("n{} g{}: stream {} is missing", n.id(), group, c->stream()));
            return;
        }
        std::vector<byte_slice> slices;
        const std::uint64_t first = s->first_offset();
        s->bytes.read(first, s->tail() - first, slices);
        std::string bytes;
        for (const auto& slice : slices) bytes.append(slice.data, slice.size);

        const auto& writes = c->writes();
        for (std::size_t i = 0; i < writes.size(); ++i) {
            if (writes[i].acks.empty()) {
                _check.fail("client", fmt::format("{}: write {} never answered", c->describe(), i));
                return;
            }
            for (const auto& [start, end] : writes[i].acks) {
                if (start < first || end > s->tail() || end < start ||
                    bytes.compare(start - first, end - start, writes[i].body) != 0) {
                    _check.fail("acknowledged write lost",
                                fmt::format("n{} g{}: {}: write {} ({:?}) was acknowledged at "
                                            "[{}, {}), which holds something else",
                                            n.id(), group, c->describe(), i,
                                            writes[i].body, start, end));
                    return;
                }
            }
        }
        // The client's records in the stream, in order.
        const std::string tag = c->tag() + ".";
        std::vector<std::uint64_t> seen;
        for (std::size_t at = 0; at < bytes.size();) {
            const std::size_t end = bytes.find('\n', at);
            const std::string_view line(bytes.data() + at,
                                        (end == std::string::npos ? bytes.size() : end) - at);
            if (line.starts_with(tag)) seen.push_back(std::stoull(std::string(line.substr(tag.size()))));
            at = end == std::string::npos ? bytes.size() : end + 1;
        }
        if (c->kind() == client_kind::plain) {
            std::vector<unsigned> count(writes.size(), 0);
            for (const auto k : seen) {
                if (k >= writes.size()) {
                    _check.fail("phantom write", fmt::format("n{} g{}: {}: record {} was never sent",
                                                             n.id(), group, c->describe(), k));
                    return;
                }
                ++count[k];
            }
            for (std::size_t k = 0; k < writes.size(); ++k) {
                if (count[k] == 0 || count[k] > writes[k].attempts) {
                    _check.fail("acknowledged write lost",
                                fmt::format("n{} g{}: {}: write {} appears {} times after {} "
                                            "attempts",
                                            n.id(), group, c->describe(), k, count[k],
                                            writes[k].attempts));
                    return;
                }
            }
        } else {
            // Exactly once each, in order: a repeat never appends again.
            bool exact = seen.size() == writes.size();
            for (std::size_t k = 0; exact && k < seen.size(); ++k) exact = seen[k] == k;
            if (!exact) {
                std::string list;
                for (const auto k : seen) list += fmt::format(" {}", k);
                _check.fail(seen.size() > writes.size() ? "producer write applied twice"
                                                        : "acknowledged write lost",
                            fmt::format("n{} g{}: {}: the stream holds its writes{} (of {})",
                                        n.id(), group, c->describe(), list, writes.size()));
                return;
            }
            if (c->kind() == client_kind::closer && !s->closed) {
                _check.fail("acknowledged write lost",
                            fmt::format("n{} g{}: {}: the close was acknowledged but the stream "
                                        "is open",
                                        n.id(), group, c->describe()));
                return;
            }
        }
    }
}

}  // namespace dstream::sim
