#include <cstdlib>

#include "storage/s3_object_store.h"

namespace dstream::storage {
namespace {

using protocol::error_code;

// The bucket naming rules of S3 that an address depends on: 3 to 63
// lower-case letters, digits, dots and hyphens, a letter or digit at both
// ends, no empty label between dots.
bool valid_bucket_name(std::string_view name) {
    if (name.size() < 3 || name.size() > 63) return false;
    const auto alphanumeric = [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9');
    };
    if (!alphanumeric(name.front()) || !alphanumeric(name.back())) return false;
    for (std::size_t i = 0; i < name.size(); ++i) {
        const char c = name[i];
        if (!alphanumeric(c) && c != '.' && c != '-') return false;
        if (c == '.' && (name[i - 1] == '.' || name[i - 1] == '-' || name[i + 1] == '-'))
            return false;
    }
    return true;
}

}  // namespace

result<s3_location> parse_s3_url(std::string_view url) {
    constexpr std::string_view scheme = "s3://";
    if (!url.starts_with(scheme))
        return make_error(error_code::invalid_request, "an S3 location is s3://BUCKET[/PREFIX]");
    url.remove_prefix(scheme.size());
    const std::size_t slash = url.find('/');
    s3_location location;
    location.bucket = std::string(url.substr(0, slash));
    if (!valid_bucket_name(location.bucket))
        return make_error(
            error_code::invalid_request,
            "an S3 bucket name is 3 to 63 lower-case letters, digits, dots and hyphens");
    if (slash != std::string_view::npos) {
        std::string_view prefix = url.substr(slash + 1);
        while (prefix.ends_with('/')) prefix.remove_suffix(1);
        // An empty segment would make keys no listing by "PREFIX/" finds again.
        if (prefix.starts_with('/') || prefix.find("//") != std::string_view::npos)
            return make_error(error_code::invalid_request, "an S3 prefix has no empty segment");
        location.prefix = std::string(prefix);
    }
    return location;
}

result<s3_credentials> s3_credentials_from_environment() {
    const auto variable = [](const char* name) {
        const char* value = std::getenv(name);
        return std::string(value == nullptr ? "" : value);
    };
    s3_credentials credentials{variable("AWS_ACCESS_KEY_ID"), variable("AWS_SECRET_ACCESS_KEY"),
                               variable("AWS_SESSION_TOKEN")};
    if (credentials.access_key_id.empty())
        return make_error(error_code::invalid_request, "AWS_ACCESS_KEY_ID is not set");
    if (credentials.secret_access_key.empty())
        return make_error(error_code::invalid_request, "AWS_SECRET_ACCESS_KEY is not set");
    return credentials;
}

}  // namespace dstream::storage
