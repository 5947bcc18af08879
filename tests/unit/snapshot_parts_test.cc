// extensions 2.2, Upload in Parts: the shape of a commit and the part ids.
#include "protocol/snapshot_parts.h"

#include <gtest/gtest.h>

#include <string>

namespace dstream::protocol {
namespace {

void expect_invalid(const result<std::vector<std::string>>& r) {
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.err().code, error_code::invalid_parts_commit);
}

TEST(PartsCount, CanonicalDecimalFromOneTo4096) {
    EXPECT_EQ(*parse_parts_count("1"), 1u);
    EXPECT_EQ(*parse_parts_count("17"), 17u);
    EXPECT_EQ(*parse_parts_count("4096"), 4096u);
    for (const char* bad : {"", "0", "01", "4097", "10000", "+1", "-1", " 1", "1 ", "1.0", "0x10", "a"}) {
        SCOPED_TRACE(bad);
        const auto r = parse_parts_count(bad);
        ASSERT_FALSE(r.ok());
        EXPECT_EQ(r.err().code, error_code::invalid_parts_commit);
    }
}

TEST(PartsList, ExactlyCountDistinctIdsEachEndedByOneLf) {
    const auto r = parse_parts_list("a\nbb\nccc\n", 3);
    ASSERT_TRUE(r.ok());
    EXPECT_EQ(*r, (std::vector<std::string>{"a", "bb", "ccc"}));
    const std::string longest(max_part_id_bytes, 'z');
    ASSERT_TRUE(parse_parts_list(longest + "\n", 1).ok());
}

TEST(PartsList, RefusesEveryOtherShape) {
    expect_invalid(parse_parts_list("a\nb\n", 3));       // too few
    expect_invalid(parse_parts_list("a\nb\nc\n", 2));    // too many
    expect_invalid(parse_parts_list("a\nb", 2));         // no final LF
    expect_invalid(parse_parts_list("a\n\nb\n", 2));     // an empty id
    expect_invalid(parse_parts_list("a\r\nb\r\n", 2));   // CR is no visible character
    expect_invalid(parse_parts_list("a b\n", 1));        // nor is a space
    expect_invalid(parse_parts_list("\xc3\xa9\n", 1));   // nor non-ASCII
    expect_invalid(parse_parts_list("a\na\n", 2));       // a repeated id
    expect_invalid(parse_parts_list("", 1));             // nothing
    expect_invalid(parse_parts_list(std::string(max_part_id_bytes + 1, 'z') + "\n", 1));
}

TEST(PartsList, ABodyLongerThanAnyListIsRefusedUnscanned) {
    // Two ids of at most 64 characters take at most 130 bytes.
    const std::string id(max_part_id_bytes, 'q');
    ASSERT_TRUE(parse_parts_list(id + "\n" + std::string(max_part_id_bytes, 'r') + "\n", 2).ok());
    expect_invalid(parse_parts_list(std::string(2 * (max_part_id_bytes + 1) + 1, '\n'), 2));
}

TEST(PartId, ThirtyTwoLowercaseHexDigitsThatCarryTheStagingTime) {
    const unix_ms at = 1'700'000'000'123;
    const std::string id = make_part_id(at, 0xabcd, 0x0123456789abcdefULL);
    EXPECT_EQ(id.size(), 32u);
    EXPECT_EQ(id, "018bcfe5687babcd0123456789abcdef");
    EXPECT_EQ(part_staged_at(id), at);
    EXPECT_TRUE(parse_parts_list(id + "\n", 1).ok());  // a valid id on the wire
}

TEST(PartId, OtherIdsCarryNoTime) {
    EXPECT_FALSE(part_staged_at(""));
    EXPECT_FALSE(part_staged_at("018bcfe5687babcd0123456789abcde"));    // 31 digits
    EXPECT_FALSE(part_staged_at("018bcfe5687babcd0123456789abcdef0"));  // 33 digits
    EXPECT_FALSE(part_staged_at("018BCFE5687BABCD0123456789ABCDEF"));   // uppercase
    EXPECT_FALSE(part_staged_at("../../chunks/0123456789abcdef0123"));
}

}  // namespace
}  // namespace dstream::protocol
