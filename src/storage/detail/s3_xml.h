#pragma once
// The few S3 answers we read, out of their XML (expat): a ListObjectsV2
// page, an error's Code, a multipart upload's id.
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
std::optional<s3_list_page> parse_s3_list_page(std::string_view xml);

// The Code of an <Error> document; empty when the body is none (a HEAD's).
std::string parse_s3_error_code(std::string_view xml);

// The UploadId of an InitiateMultipartUploadResult.
std::optional<std::string> parse_s3_upload_id(std::string_view xml);

}  // namespace dstream::storage::detail
