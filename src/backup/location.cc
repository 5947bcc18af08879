#include "backup/location.h"

#include "storage/local_dir_object_store.h"
#include "storage/s3_object_store.h"

namespace dstream::backup {

bool is_s3_location(std::string_view location) { return location.starts_with("s3://"); }

result<std::unique_ptr<storage::object_store>> open_location(std::string_view location,
                                                             const location_options& options) {
    if (location.empty()) {
        return make_error(protocol::error_code::invalid_request, "no backup location given");
    }
    if (!is_s3_location(location)) {
        return std::unique_ptr<storage::object_store>(
            std::make_unique<storage::local_dir_object_store>(std::string(location)));
    }
    auto parsed = storage::parse_s3_url(location);
    if (!parsed) return parsed.err();
    auto credentials = storage::s3_credentials_from_environment();
    if (!credentials) return credentials.err();
    storage::s3_options s3;
    s3.location = std::move(*parsed);
    s3.endpoint = options.s3_endpoint;
    s3.region = options.s3_region;
    s3.credentials = std::move(*credentials);
    return storage::make_s3_object_store(std::move(s3));
}

}  // namespace dstream::backup
