#pragma once
// Where a backup lives: a directory, or s3://BUCKET/PREFIX (credentials from
// AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY / AWS_SESSION_TOKEN, as for the
// cold store). One backup per location: its files under it, its manifest last.
#include <memory>
#include <string>
#include <string_view>

#include "base/result.h"
#include "storage/object_store.h"

namespace dstream::backup {

struct location_options {
    std::string s3_endpoint;  // empty: AWS itself
    std::string s3_region = "us-east-1";
};

bool is_s3_location(std::string_view location);
// The store of a location's files; refused for an s3:// URL it cannot use.
result<std::unique_ptr<storage::object_store>> open_location(std::string_view location,
                                                             const location_options& options);

}  // namespace dstream::backup
