#pragma once
// The admin listener's routes (docs/operations.md, "Backups and restores"):
//
//   GET  /__ursula/health                   the admin listener answers
//   GET  /__ursula/admin/node               the node: cluster id, groups, which it leads
//   POST /__ursula/backup/begin             {"location"}: a new backup id; the location holds no backup
//   POST /__ursula/backup/groups/{g}        {"location","backup_id"}: the leader's capture of
//                                           group g, its image and cold objects copied there
//   POST /__ursula/backup/manifest          {"location","manifest"}: the manifest, written last
//   POST /__ursula/restore/groups/{g}       {"location"}: group g rewound to the backup, one
//                                           restore_group command through its log; with
//                                           "prepare": true, its files checked and its
//                                           objects put in place only
//   POST /__ursula/accept-loss/groups/{g}   a new history from what group g holds
//
// Group work is the group's leader's: another node answers 503 NO_LEADER
// naming the leader it knows. Copies run on a thread of the plane's own,
// never on a group or a connection; one at a time.
#include <cstdint>
#include <memory>
#include <string>

#include <boost/asio/thread_pool.hpp>

#include "backup/location.h"
#include "edge/admin_plane.h"
#include "runtime/clock.h"
#include "runtime/cluster_map.h"
#include "runtime/random.h"
#include "service/engine.h"
#include "storage/held_object_store.h"

namespace dstream::admin {

struct plane_inputs {
    service::engine& engine;
    // The node's cold store, whose removals a backup holds off; null with
    // --memory (no cold tier: every byte is in the images).
    storage::held_object_store* cold = nullptr;
    std::string cluster_id;
    std::uint64_t node_id = 0;  // a cluster's node; 0 on a single node
    // A cluster's nodes and their admin listeners; null on a single node.
    const runtime::cluster_map* cluster = nullptr;
    // How the node reaches an s3:// location: its own S3 endpoint and region.
    backup::location_options location;
    const runtime::clock& clock;
    runtime::random_source& random;
};

class operator_plane final : public edge::admin_plane {
public:
    explicit operator_plane(plane_inputs in);
    ~operator_plane() override;

    boost::asio::awaitable<edge::admin_answer> answer(edge::admin_request& request) override;
    // Ends the copies in flight at a stop (they fail; nothing is half-visible).
    void stop();

private:
    struct group_route;
    boost::asio::awaitable<edge::admin_answer> backup_begin(const std::string& body);
    boost::asio::awaitable<edge::admin_answer> backup_group(std::uint32_t group,
                                                            const std::string& body);
    boost::asio::awaitable<edge::admin_answer> backup_manifest(const std::string& body);
    boost::asio::awaitable<edge::admin_answer> restore_group(std::uint32_t group,
                                                             const std::string& body);
    boost::asio::awaitable<edge::admin_answer> accept_loss(std::uint32_t group);
    edge::admin_answer node_info() const;

    plane_inputs _in;
    boost::asio::thread_pool _work{1};
};

}  // namespace dstream::admin
