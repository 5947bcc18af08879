#pragma once
// The cold tier `dstream serve` composes from --cold-store: the directory
// objects/ under the data dir, or an S3 bucket where this node's keys live
// under PREFIX/<cluster id>/ (docs/disk-format.md, "Object keys"). Either way
// metered.
#include <filesystem>
#include <memory>
#include <string>

#include "cli/serve_options.h"
#include "storage/metered_object_store.h"
#include "storage/prefixed_object_store.h"

namespace dstream::cli {

class node_cold_store {
public:
    // Throws config::invalid_setting when the bucket cannot be used (no
    // credentials in the environment, an endpoint the store refuses).
    node_cold_store(const serve_options& opts, const std::filesystem::path& data_dir,
                    const std::string& cluster_id);

    storage::object_store& store() { return *_metered; }
    // For the start line: the directory, or s3://BUCKET/PREFIX/<cluster id>/.
    const std::string& where() const { return _where; }

private:
    // Each layer wraps the one before it, and goes before it.
    std::unique_ptr<storage::object_store> _base;
    std::unique_ptr<storage::prefixed_object_store> _node_share;  // S3 only
    std::unique_ptr<storage::metered_object_store> _metered;
    std::string _where;
};

// TOML comments for `dstream config print` with an S3 cold store: whether
// each AWS_* credential variable is set, its value masked.
std::string describe_s3_credentials();

}  // namespace dstream::cli
