#include "protocol/content_type.h"

#include <gtest/gtest.h>

#include <string>

namespace dstream::protocol {
namespace {

TEST(ContentType, EssenceDropsParametersTrimsAndLowercases) {
    struct row {
        const char* in;
        const char* essence;
    };
    const row rows[] = {
        {"text/plain", "text/plain"},
        {"Text/Plain; charset=UTF-8", "text/plain"},
        {"  application/JSON  ", "application/json"},
        {"\tapplication/json\t;x=1", "application/json"},
        {"application/octet-stream;", "application/octet-stream"},
        {"", ""},
        {";a=b", ""},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.in);
        EXPECT_EQ(media_type_essence(r.in), r.essence);
    }
}

TEST(ContentType, SameMediaTypeIsCaseInsensitiveAndIgnoresParameters) {
    struct row {
        const char* a;
        const char* b;
        bool same;
    };
    const row rows[] = {
        {"text/plain", "text/plain", true},
        {"text/plain", "TEXT/PLAIN", true},
        {"text/plain; charset=utf-8", "text/plain", true},
        {"application/json", "Application/Json; charset=utf-8", true},
        {"text/plain", "text/html", false},
        {"application/json", "application/x-ndjson", false},
        {"application/octet-stream", "", false},
        {"text/plain", "text/plain2", false},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(std::string(r.a) + " | " + r.b);
        EXPECT_EQ(same_media_type(r.a, r.b), r.same);
        EXPECT_EQ(same_media_type(r.b, r.a), r.same);
    }
}

TEST(ContentType, JsonMediaTypeDetection) {
    EXPECT_TRUE(is_json_media_type("application/json"));
    EXPECT_TRUE(is_json_media_type("APPLICATION/JSON; charset=utf-8"));
    EXPECT_FALSE(is_json_media_type("application/x-ndjson"));
    EXPECT_FALSE(is_json_media_type("application/json-patch+json"));
    EXPECT_FALSE(is_json_media_type("text/json"));
    EXPECT_FALSE(is_json_media_type(""));
}

TEST(ContentType, TextForSseIsTextStarOrJson) {
    struct row {
        const char* ct;
        bool text;
    };
    const row rows[] = {
        {"text/plain", true},
        {"TEXT/HTML; charset=utf-8", true},
        {"text/event-stream", true},
        {"application/json", true},
        {"Application/JSON;x=1", true},
        {"application/octet-stream", false},
        {"application/x-ndjson", false},
        {"image/png", false},
        {"texts/plain", false},
        {"", false},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.ct);
        EXPECT_EQ(is_text_for_sse(r.ct), r.text);
    }
}

TEST(ContentType, ValidContentTypeSyntax) {
    struct row {
        const char* ct;
        bool valid;
    };
    const row rows[] = {
        {"text/plain", true},
        {"application/json; charset=utf-8", true},
        {"application/vnd.api+json", true},
        {"x-custom/x_y-z.1", true},
        {" text/plain ", true},
        {"", false},
        {"text", false},
        {"/plain", false},
        {"text/", false},
        {"text/plain/extra", false},
        {"text /plain", false},
        {"text/pl ain", false},
        {"text/pl\"ain", false},
        {"text/(plain)", false},
        {"te@xt/plain", false},
    };
    for (const auto& r : rows) {
        SCOPED_TRACE(r.ct);
        EXPECT_EQ(is_valid_content_type(r.ct), r.valid);
    }
}

TEST(ContentType, DefaultIsOctetStream) {
    EXPECT_EQ(default_content_type, "application/octet-stream");
    EXPECT_TRUE(is_valid_content_type(default_content_type));
    EXPECT_FALSE(is_text_for_sse(default_content_type));
}

}  // namespace
}  // namespace dstream::protocol
