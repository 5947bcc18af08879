#pragma once
// What a node keeps about itself in its data directory (`node.meta`): the
// deployment's Ursula-Cluster-Id (extensions 10), generated at first start and
// kept across restarts, and the number of groups its streams hash to, which
// cannot change without moving every stream.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <string>

#include "base/file_io.h"

namespace dstream::runtime {

struct node_meta {
    std::string cluster_id;
    std::size_t group_count = 0;
    std::uint32_t node_id = 0;  // in a cluster, the node the data dir belongs to; 0: a single node
};

// A fresh id: "dstream-" and 16 random hex digits.
std::string generate_cluster_id();

// 1 to 64 characters from A-Z a-z 0-9 . _ -
bool is_valid_cluster_id(const std::string& id);

// Reads `<data_dir>/node.meta`, creating it on first start with `group_count`
// (and, for a cluster's node, `cluster`'s id and node id instead of a fresh
// id). Throws when the file is damaged or names another group count, cluster
// or node, or when it cannot be made durable.
node_meta load_or_create_node_meta(const std::filesystem::path& data_dir, std::size_t group_count,
                                   file_io& io = posix_file_io(),
                                   const node_meta* cluster = nullptr);

}  // namespace dstream::runtime
