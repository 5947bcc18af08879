#pragma once
// The cluster file of `dstream serve --cluster FILE` (docs/operations.md):
//
//   cluster_id = "prod-eu-1"   # Ursula-Cluster-Id on every answer of every node
//   groups = 64                # Raft groups
//   replicas = 3               # voters per group: 3 or 5
//   [[node]]
//   id = 1
//   raft = "10.0.0.1:7100"     # peer transport
//   http = "10.0.0.1:4437"     # client HTTP
//   admin = "10.0.0.1:4438"    # optional: the admin listener (--admin-listen's default)
//
// Every key but a node's admin is required and no other is taken: a
// misspelt one must not pass for a default.
#include <string>
#include <string_view>

#include "runtime/cluster_map.h"

namespace dstream::config {

// Throw config::invalid_setting (setting.h) naming the source (the file's
// path), the line or node where it can, and what is wrong.
runtime::cluster_map parse_cluster_file(std::string_view text, const std::string& source);
runtime::cluster_map read_cluster_file(const std::string& path);

}  // namespace dstream::config
