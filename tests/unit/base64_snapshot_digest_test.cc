#include <string>

#include <gtest/gtest.h>

#include "protocol/digest.h"
#include "protocol/digest.h"
#include "protocol/sse.h"

namespace dstream::protocol {
namespace {

TEST(base64, decodes_what_it_encodes) {
    for (const std::string& bytes :
         {std::string(), std::string("f"), std::string("fo"), std::string("foo"),
          std::string("\0\1\xff\xfe", 4), std::string(1000, '\x80')}) {
        std::string text;
        append_base64(text, bytes);
        EXPECT_EQ(decode_base64(text), bytes) << text;
    }
}

TEST(base64, refuses_what_is_not_padded_base64) {
    EXPECT_FALSE(decode_base64("Zm9"));
    EXPECT_FALSE(decode_base64("Zm9v!A=="));
    EXPECT_FALSE(decode_base64("Zg==Zg=="));
    EXPECT_FALSE(decode_base64("===="));
}

TEST(snapshot_digest, covers_the_length_of_the_content_type_the_type_and_the_body) {
    const std::string type = "application/json";
    const std::string body = "{\"state\":1}";
    std::string covered(8, '\0');
    covered[0] = static_cast<char>(type.size());
    covered += type + body;
    EXPECT_EQ(snapshot_digest(type, body), blake3_256(covered));
    EXPECT_NE(snapshot_digest("text/plain", body), snapshot_digest(type, body));
}

}  // namespace
}  // namespace dstream::protocol
