#pragma once
// The deployment's Ursula-Cluster-Id (extensions 10): generated at a node's
// first start and kept in its data directory, so it survives restarts.
#include <filesystem>
#include <string>

namespace dstream::runtime {

// A fresh id: "dstream-" and 16 random hex digits.
std::string generate_cluster_id();

// Reads `<data_dir>/cluster-id`, creating it on first start. Throws on I/O errors.
std::string load_or_create_cluster_id(const std::filesystem::path& data_dir);

// 1 to 64 characters from A-Z a-z 0-9 . _ -
bool is_valid_cluster_id(const std::string& id);

}  // namespace dstream::runtime
