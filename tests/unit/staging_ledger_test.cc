// extensions 2.2 notes: the leader's count of a stream's staged parts and
// the bounds it holds a part against (8192 parts, 2 GiB, all incarnations).
#include "service/staging_ledger.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "service/cold_tier.h"

namespace dstream::service {
namespace {

const std::string key = "bucket/stream";

std::string part_key(std::uint64_t incarnation, int n) {
    return part_object_key(key, incarnation, "part" + std::to_string(n));
}

// A ledger that has listed `key` once, with nothing staged.
std::shared_ptr<staging_ledger> listed_ledger() {
    auto ledger = std::make_shared<staging_ledger>();
    EXPECT_TRUE(ledger->admit(key, 1, false).needs_listing) << "the first part lists the stream";
    return ledger;
}

TEST(StagingLedger, TheFirstPartListsThenCounts) {
    auto ledger = listed_ledger();
    auto first = ledger->admit(key, 10, true);
    ASSERT_TRUE(first.upload);
    EXPECT_FALSE(first.exceeded);
    auto second = ledger->admit(key, 10, false);
    EXPECT_FALSE(second.needs_listing) << "listed moments ago";
    EXPECT_TRUE(second.upload);
}

TEST(StagingLedger, AnUploadCountsItsDeclaredBytesUntilDropped) {
    auto ledger = listed_ledger();
    auto big = ledger->admit(key, max_staged_bytes - 10, true);
    ASSERT_TRUE(big.upload);
    const auto refused = ledger->admit(key, 11, false);
    ASSERT_TRUE(refused.exceeded);
    EXPECT_EQ(refused.exceeded->what, staging_bound::kind::bytes);
    EXPECT_EQ(refused.exceeded->value, max_staged_bytes);
    EXPECT_TRUE(ledger->admit(key, 10, false).upload) << "exactly at the bound is allowed";
    big.upload.reset();  // the upload failed or the client went away
    EXPECT_TRUE(ledger->admit(key, 1u << 30, true).upload);
}

TEST(StagingLedger, AStagedPartCountsItsSizeNotItsDeclaration) {
    auto ledger = listed_ledger();
    auto upload = ledger->admit(key, max_staged_bytes, true);
    ASSERT_TRUE(upload.upload);
    ASSERT_TRUE(ledger->staged(*upload.upload, part_key(1, 0), 100));
    upload.upload.reset();  // already staged: dropping it uncounts nothing
    EXPECT_TRUE(ledger->admit(key, max_staged_bytes - 100, false).upload);
    EXPECT_TRUE(ledger->admit(key, 0, false).upload);
}

TEST(StagingLedger, TheNumberOfPartsIsBoundedAcrossIncarnations) {
    auto ledger = listed_ledger();
    std::vector<storage::object_entry> listed;
    for (std::uint64_t i = 0; i + 1 < max_staged_parts; ++i) {
        listed.push_back({part_key(1 + i % 2, static_cast<int>(i)), 1});
    }
    ledger->end_listing(key, ledger->begin_listing(), listed);
    auto last = ledger->admit(key, 1, false);
    ASSERT_TRUE(last.upload) << "part 8192";
    const auto refused = ledger->admit(key, 1, false);
    ASSERT_TRUE(refused.exceeded);
    EXPECT_EQ(refused.exceeded->what, staging_bound::kind::parts);
    EXPECT_EQ(refused.exceeded->value, max_staged_parts);
    EXPECT_EQ(ledger->incarnations(key), (std::vector<std::uint64_t>{1, 2}));
}

TEST(StagingLedger, AListingReplacesTheCountButKeepsPartsStagedWhileItRan) {
    auto ledger = listed_ledger();
    auto before = ledger->admit(key, 1, true);
    ASSERT_TRUE(ledger->staged(*before.upload, part_key(1, 1), max_staged_bytes / 2));
    const std::uint64_t began = ledger->begin_listing();
    auto during = ledger->admit(key, 1, false);
    ASSERT_TRUE(ledger->staged(*during.upload, part_key(1, 2), max_staged_bytes / 2));
    // The store listed neither: the first was removed (a discard), the second
    // may have been staged after the listing read its directory.
    ledger->end_listing(key, began, {});
    auto fits = ledger->admit(key, max_staged_bytes / 2, false);
    EXPECT_TRUE(fits.upload);
    EXPECT_TRUE(ledger->admit(key, 1, false).exceeded) << "the part staged during the listing still counts";
}

TEST(StagingLedger, AStaleCountIsListedAgainBeforeARefusal) {
    auto ledger = listed_ledger();
    auto full = ledger->admit(key, max_staged_bytes, true);
    ASSERT_TRUE(full.upload);
    EXPECT_TRUE(ledger->admit(key, 1, false).exceeded) << "listed moments ago: refused";
    ledger->forget_listings();  // as after a sweep removed parts
    EXPECT_TRUE(ledger->admit(key, 1, false).needs_listing);
}

TEST(StagingLedger, StreamsAreCountedApart) {
    auto ledger = listed_ledger();
    auto full = ledger->admit(key, max_staged_bytes, true);
    ASSERT_TRUE(full.upload);
    EXPECT_TRUE(ledger->admit("bucket/other", max_staged_bytes, true).upload);
    EXPECT_TRUE(ledger->admit(key, 1, false).exceeded);
}

TEST(PartObjectKey, RoundTripsAndSharesTheStreamDirectory) {
    const std::string object = part_object_key(key, 4503599627370497, "0123456789abcdef0123456789abcdef");
    ASSERT_TRUE(object.starts_with(stream_parts_prefix(key)));
    ASSERT_TRUE(object.starts_with(std::string(part_key_prefix)));
    const auto name = parse_part_object_key(object);
    ASSERT_TRUE(name);
    EXPECT_EQ(name->stream_prefix, stream_parts_prefix(key));
    EXPECT_EQ(name->incarnation, 4503599627370497u);
    EXPECT_EQ(name->part_id, "0123456789abcdef0123456789abcdef");
    EXPECT_NE(stream_parts_prefix(key), stream_parts_prefix("bucket/other"));
    for (const char* bad : {"parts/", "chunks/ab/0123456789abcdef/1/x", "parts/ab/0123456789abcdef/x/id",
                            "parts/ab/0123456789abcdef/1/", "parts/ab/0123456789abcdef/1/a/b"}) {
        EXPECT_FALSE(parse_part_object_key(bad)) << bad;
    }
}

}  // namespace
}  // namespace dstream::service
