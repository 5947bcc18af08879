#pragma once
// The few S3 answers we read, out of their XML (expat): a ListObjectsV2
// page, an error's Code, a multipart upload's id.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "storage/object_store.h"

namespace dstream::storage::detail {

struct s3_list_page {
    std::vector<object_entry> objects;  // full keys, the store's prefix included
    std::string next_token;             // empty on the last page
};
// Nothing when the XML is malformed or a truncated page names no next token.
// An object's LastModified that does not parse leaves its modified_ms 0
// (unknown: the orphan sweep never takes it).
std::optional<s3_list_page> parse_s3_list_page(std::string_view xml);

// S3's timestamps, "2026-12-01T14:20:33.000Z" (the fraction optional, UTC),
// in ms since the Unix epoch; nothing for any other text.
std::optional<std::int64_t> parse_s3_timestamp_ms(std::string_view text);

// The Code of an <Error> document; empty when the body is none (a HEAD's).
std::string parse_s3_error_code(std::string_view xml);

// The UploadId of an InitiateMultipartUploadResult.
std::optional<std::string> parse_s3_upload_id(std::string_view xml);

}  // namespace dstream::storage::detail
