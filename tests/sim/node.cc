#include "node.h"

#include <fmt/format.h>

#include "replication/raft_records.h"
#include "replication/recovery.h"

namespace dstream::sim {
namespace {

const char* record_kind_name(replication::raft_record_kind kind) {
    switch (kind) {
        case replication::raft_record_kind::command:
            return "command";
        case replication::raft_record_kind::barrier:
            return "barrier";
        case replication::raft_record_kind::configuration:
            return "configuration";
        case replication::raft_record_kind::hard_state:
            return "hard state";
        case replication::raft_record_kind::snapshot_installed:
            return "snapshot installed";
    }
    return "?";
}

}  // namespace

sim_node::sim_node(std::uint64_t id, world_services services)
    : _id(id),
      _w(services),
      _disk(id, services.events, services.rng, services.options, services.trace) {}

sim_node::~sim_node() {
    // The log first: the replica's destructor calls nobody.
    for (auto& g : _groups) g.log.reset();
}

void sim_node::start() {
    ++_incarnation;
    if (_incarnation > 1) ++_w.check.count().restarts;
    const auto skew = static_cast<std::int64_t>(_w.rng.between(0, 4000)) - 2000;
    _clock = std::make_unique<node_clock>(_w.events, skew);
    _random = std::make_unique<node_random>(_w.rng.next());
    _w.trace("n{}: starts (incarnation {}, {} WAL records)", _id, _incarnation, _disk.records());

    std::vector<std::uint64_t> voters;
    for (unsigned n = 1; n <= _w.options.nodes; ++n) voters.push_back(n);
    std::vector<replication::group_recovery> recovering;
    std::vector<live_group> groups;
    for (std::uint32_t g = 0; g < _w.options.groups; ++g) {
        recovering.emplace_back(g, voters);
        live_group live;
        live.group = std::make_unique<sim_group>(
            g, sim_group::inputs{_id, *_clock, *_random, service::group_strand(_w.io), _w.check,
                                 _w.trace, _w.options.checkpoint_every, _w.options.digest_every});
        if (const node_disk::checkpoint* c = _disk.newest_checkpoint(g)) {
            auto header = replication::decode_snapshot_header(c->header);
            std::uint32_t group_id = 0;
            std::uint64_t index = 0;
            auto state = state::group_state::restore_checkpoint(c->image, group_id, index);
            if (!header || !state || group_id != g || index != c->index ||
                header->meta.index != index) {
                throw std::runtime_error(
                    fmt::format("n{} g{}: checkpoint {} is damaged", _id, g, c->index));
            }
            recovering[g].checkpoint(index, *header);
            live.group->restore(std::move(*state), index, header->meta.term);
        }
        groups.push_back(std::move(live));
    }
    try {
        _disk.recover([&](std::uint32_t g, std::uint64_t index, std::string_view payload) {
            recovering[g].record(index, payload, log::wal_payloads::raft_records,
                                 [&](std::uint64_t i, std::uint64_t, std::string_view) {
                                     throw std::runtime_error(fmt::format(
                                         "n{} g{}: recovery applied index {} of a group with "
                                         "peers",
                                         _id, g, i));
                                 });
        });
    } catch (const std::exception& e) {
        if (_w.trace.on()) dump_wal();
        throw std::runtime_error(fmt::format("n{}: recovery: {}", _id, e.what()));
    }
    for (std::uint32_t g = 0; g < _w.options.groups; ++g) {
        live_group& live = groups[g];
        const std::uint64_t last_index = recovering[g].last_index();
        replication::durable_state recovered = recovering[g].finish();
        live.transport = std::make_unique<network::endpoint>(_w.net, _id, g);
        live.disk = std::make_unique<group_disk>(_disk, _w.check, _id, g, last_index);
        live.disk->start_view(recovered);
        replication::raft_options raft;
        raft.node = _id;
        raft.voters = voters;
        raft.election_ms = _w.options.election_ms;
        raft.heartbeat_ms = _w.options.heartbeat_ms;
        raft.seed = _w.rng.next();
        raft.pre_vote = _w.options.pre_vote;
        raft.trailing = _w.options.trailing;
        raft.reference_bytes = _w.options.reference_bytes;
        raft.message_entry_bytes = _w.options.message_entry_bytes;
        _w.trace("n{} g{}: recovered term {} vote {} snapshot {} (term {}) entries {}..{}", _id,
                 g, recovered.term, recovered.vote,
                 recovered.snapshot ? recovered.snapshot->index : 0,
                 recovered.snapshot ? recovered.snapshot->term : 0, recovered.first_index,
                 recovered.first_index + recovered.entries.size() - 1);
        live.log =
            std::make_unique<sim_log>(sim_log::setup{_id, g, std::move(raft), std::move(recovered)},
                                      *live.disk, *live.transport, _w.events, _w.check, _w.trace);
        live.group->attach_log(*live.log);
    }
    _groups = std::move(groups);
    for (auto& live : _groups) live.log->start();
}

void sim_node::dump_wal() const {
    _w.trace("n{}: the WAL, oldest record first:", _id);
    _disk.recover([&](std::uint32_t g, std::uint64_t index, std::string_view payload) {
        const auto r = replication::decode_raft_record(payload);
        if (!r) return;
        _w.trace("  g{} index {} {} term {}{}", g, index, record_kind_name(r->kind), r->term,
                 r->kind == replication::raft_record_kind::hard_state
                     ? fmt::format(" vote {}", r->vote)
                     : std::string());
    });
}

void sim_node::crash() {
    _w.trace("n{}: crashes", _id);
    for (auto& g : _groups) g.log->stop();
    for (auto& g : _groups) g.log.reset();
    _groups.clear();
    _disk.crash();
}

void sim_node::receive(std::uint32_t group, std::string_view bytes) {
    if (!up()) return;
    _groups[group].log->receive(bytes);
}

}  // namespace dstream::sim
