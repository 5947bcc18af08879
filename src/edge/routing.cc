#include "edge/routing.h"

#include <string>

#include "edge/headers.h"

namespace dstream::edge {
namespace {

std::string location_on(const runtime::cluster_node& node, const request& req) {
    return "http://" + node.http.text() + std::string(req.target());
}

response redirect(const exchange& ex, const runtime::cluster_node& node) {
    response res = ex.make_response(http::status::temporary_redirect);
    res.set(http::field::location, location_on(node, ex.req()));
    res.set(http::field::cache_control, "no-store");
    return res;
}

}  // namespace

response route_to_leader(const exchange& ex, const service::placement& where) {
    const runtime::cluster_map* cluster = ex.options().cluster;
    const runtime::cluster_node* leader =
        cluster != nullptr && where.leader != 0 && where.term != 0
            ? cluster->node(static_cast<std::uint32_t>(where.leader))
            : nullptr;
    if (leader == nullptr || where.leads) {
        // A node that knows a leader but not its term answers as one that
        // knows none: every 307 then parses as one of the two shapes.
        response res = ex.make_error(make_error(protocol::error_code::no_leader,
                                                "the stream's group has no known leader; retry"));
        res.set(hdr::raft_group, std::to_string(where.group));
        return res;
    }
    response res = redirect(ex, *leader);
    res.set(hdr::raft_leader_id, std::to_string(where.leader));
    res.set(hdr::raft_group, std::to_string(where.group));
    res.set(hdr::raft_term, std::to_string(where.term));
    return res;
}

std::optional<response> route_elsewhere(const exchange& ex, const service::placement& where,
                                        answered_by need) {
    const runtime::cluster_map* cluster = ex.options().cluster;
    if (cluster == nullptr) return std::nullopt;
    if (!where.hosted) {
        // The preferred leader among the group's voters: any of them answers
        // as a replica does.
        const auto voters = cluster->voters(where.group);
        response res = redirect(ex, *cluster->node(voters.front()));
        res.set(hdr::raft_group, std::to_string(where.group));
        return res;
    }
    if (need == answered_by::replica || where.leads) return std::nullopt;
    return route_to_leader(ex, where);
}

bool catches_up_first(const exchange& ex, const service::placement& where) {
    return ex.options().cluster != nullptr && !where.leads;
}

}  // namespace dstream::edge
