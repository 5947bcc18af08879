#include "cli/cold_store.h"

#include <chrono>
#include <cstdlib>

#include <fmt/format.h>

#include "config/setting.h"
#include "storage/local_dir_object_store.h"
#include "storage/s3_object_store.h"

namespace dstream::cli {
namespace {

storage::s3_options s3_options_of(const serve_options& opts) {
    auto location = storage::parse_s3_url(opts.cold_store);
    if (!location) throw config::invalid_setting("setting cold_store: " + location.err().message);
    storage::s3_options s3;
    s3.location = std::move(*location);
    s3.endpoint = opts.s3_endpoint;
    s3.region = opts.s3_region;
    s3.connect_timeout = std::chrono::milliseconds(opts.s3_connect_timeout_ms);
    s3.request_timeout = std::chrono::milliseconds(opts.s3_request_timeout_ms);
    auto credentials = storage::s3_credentials_from_environment();
    if (!credentials) {
        throw config::invalid_setting(
            "an S3 cold store takes its credentials from the environment: " +
            credentials.err().message);
    }
    s3.credentials = std::move(*credentials);
    return s3;
}

}  // namespace

node_cold_store::node_cold_store(const serve_options& opts, const std::filesystem::path& data_dir,
                                 const std::string& cluster_id) {
    if (opts.cold_store.empty()) {
        const std::filesystem::path dir = data_dir / "objects";
        _base = std::make_unique<storage::local_dir_object_store>(dir);
        _metered = std::make_unique<storage::metered_object_store>(*_base);
        _where = dir.string();
        return;
    }
    storage::s3_options s3 = s3_options_of(opts);
    const std::string node_prefix = cluster_id + "/";
    _where = fmt::format("s3://{}/{}", s3.location.bucket,
                         s3.location.prefix.empty() ? node_prefix
                                                    : s3.location.prefix + "/" + node_prefix);
    auto bucket = storage::make_s3_object_store(std::move(s3));
    if (!bucket) throw config::invalid_setting("setting cold_store: " + bucket.err().message);
    _base = std::move(*bucket);
    _node_share = std::make_unique<storage::prefixed_object_store>(*_base, node_prefix);
    _metered = std::make_unique<storage::metered_object_store>(*_node_share);
}

std::string describe_s3_credentials() {
    std::string out = "# S3 credentials (from the environment only):\n";
    for (const char* name : {"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN"}) {
        const char* v = std::getenv(name);
        const bool set = v != nullptr && *v != '\0';
        out += fmt::format("#   {} {}\n", name, set ? "set (masked)" : "unset");
    }
    return out;
}

}  // namespace dstream::cli
