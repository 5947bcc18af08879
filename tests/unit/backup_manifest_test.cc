// The backup format (docs/disk-format.md, "Backups"): the manifest's text,
// its whole-or-not check, and `backup verify` over a location's files.
#include "backup/manifest.h"

#include <gtest/gtest.h>

#include "backup/files.h"
#include "backup/verify.h"
#include "memory_object_store.h"
#include "protocol/digest.h"
#include "state/group_state.h"

namespace dstream::backup {
namespace {

manifest sample() {
    manifest m;
    m.id = "0123456789abcdef0123456789abcdef";
    m.created_ms = 1'760'000'000'000;
    m.cluster_id = "prod-eu-1";
    m.group_count = 2;
    m.groups = {group_entry{0, 17, 1, 0x1234, 3}, group_entry{1, 5, 2, 0xfedcba9876543210ULL, 0}};
    m.files = {file_entry{"groups/g0.ckpt", 100, std::string(64, 'a')},
               file_entry{"groups/g1.ckpt", 50, std::string(64, 'b')},
               file_entry{"objects/chunks/0a/0123456789abcdef/4503599627370497/0-4194304", 4194304,
                          std::string(64, 'c')}};
    return m;
}

TEST(BackupManifest, RoundTripsThroughItsText) {
    const manifest m = sample();
    const std::string text = render(m);
    EXPECT_TRUE(text.starts_with("dstream-backup 1\nid 0123456789abcdef0123456789abcdef\n"));
    EXPECT_NE(text.find("\ngroup 1 index 5 term 2 history fedcba9876543210 streams 0\n"),
              std::string::npos);
    auto parsed = parse(text);
    ASSERT_TRUE(parsed.ok()) << parsed.err().message;
    EXPECT_EQ(*parsed, m);
    EXPECT_EQ(render(*parsed), text);
}

TEST(BackupManifest, ATruncatedOrAlteredManifestIsNotWhole) {
    const std::string text = render(sample());
    // Cut anywhere: never whole.
    for (std::size_t cut = 0; cut < text.size(); cut += 7) {
        EXPECT_FALSE(parse(text.substr(0, cut)).ok()) << "cut at " << cut;
    }
    EXPECT_FALSE(parse(text.substr(0, text.size() - 1)).ok());
    // One byte changed anywhere before the end line: its digest fails.
    const std::size_t end_line = text.rfind("end ");
    for (std::size_t at = 0; at < end_line; at += 11) {
        std::string altered = text;
        altered[at] = altered[at] == 'x' ? 'y' : 'x';
        EXPECT_FALSE(parse(altered).ok()) << "byte " << at;
    }
    // Something after the end line.
    EXPECT_FALSE(parse(text + "file " + std::string(64, 'd') + " 1 x\n").ok());
}

TEST(BackupManifest, TheRulesOfAManifestAreChecked) {
    manifest m = sample();
    EXPECT_TRUE(check(m).ok());
    m.id = "not-hex";
    EXPECT_FALSE(check(m).ok());
    m = sample();
    m.groups.pop_back();
    EXPECT_FALSE(check(m).ok());  // a group without its entry
    m = sample();
    m.files.erase(m.files.begin() + 1);
    EXPECT_FALSE(check(m).ok());  // a group without its image
    m = sample();
    m.files.push_back(m.files[0]);
    EXPECT_FALSE(check(m).ok());  // a path twice
    for (const char* path : {"/etc/passwd", "objects/../x", "a//b", "objects/./x", "a b", ""}) {
        m = sample();
        m.files[2].path = path;
        EXPECT_FALSE(check(m).ok()) << path;
        EXPECT_FALSE(is_valid_path(path)) << path;
    }
    EXPECT_TRUE(is_valid_path("objects/snapshots/0a/0123/45/1048576-abcdef"));
}

// ------------------------------------------------------------- verify

// A backup of one group in a memory store: its image (one stream with a
// cold chunk), the chunk, and the manifest.
struct backup_fixture {
    test::memory_object_store store;
    manifest m;

    backup_fixture() {
        state::group_state g;
        g.apply(state::command{1, state::init_group{7}}, 1);
        state::create_stream c;
        c.key = "b/s";
        c.content_type = "text/plain";
        c.body = "abcdef";
        g.apply(state::command{2, c}, 2);
        const std::string chunk_key = "chunks/00/s/1/0-3";
        g.apply(state::command{3, state::flush_chunk{"b/s", g.find("b/s")->incarnation, 0, 3,
                                                     chunk_key}},
                3);
        const std::string image = state::sealed_checkpoint_bytes(g.capture_checkpoint(0, 3));
        m.id = "0123456789abcdef0123456789abcdef";
        m.cluster_id = "c";
        m.group_count = 1;
        m.groups = {group_entry{0, 3, 1, 7, 1}};
        m.files.push_back(*put_file(store, group_image_path(0), image));
        store.place(chunk_key, "abc", 0);
        m.files.push_back(*copy_object(store, chunk_key, store, object_path(chunk_key)));
        EXPECT_TRUE(store.put(std::string(manifest_name), render(m)).ok());
    }
};

TEST(BackupVerify, AWholeBackupPasses) {
    backup_fixture f;
    const verify_report r = verify_backup(f.store);
    EXPECT_TRUE(r.whole());
    EXPECT_TRUE(r.problems.empty()) << r.problems.front();
    EXPECT_EQ(r.files_checked, 2u);
}

TEST(BackupVerify, AFlippedByteAMissingFileOrATruncatedManifestFails) {
    {
        backup_fixture f;
        std::string bytes;
        ASSERT_TRUE(f.store.get("objects/chunks/00/s/1/0-3", 0, 3, bytes).ok());
        bytes[1] ^= 1;
        f.store.place("objects/chunks/00/s/1/0-3", bytes, 0);
        EXPECT_FALSE(verify_backup(f.store).whole());
    }
    {
        backup_fixture f;
        ASSERT_TRUE(f.store.remove("objects/chunks/00/s/1/0-3").ok());
        const verify_report r = verify_backup(f.store);
        EXPECT_FALSE(r.whole());
        ASSERT_EQ(r.problems.size(), 1u);
        EXPECT_NE(r.problems[0].find("is missing"), std::string::npos) << r.problems[0];
    }
    {
        backup_fixture f;
        std::string text;
        const auto size = f.store.size(std::string(manifest_name));
        ASSERT_TRUE(f.store.get(std::string(manifest_name), 0, **size, text).ok());
        f.store.place(std::string(manifest_name), text.substr(0, text.size() / 2), 0);
        EXPECT_FALSE(verify_backup(f.store).whole());
        EXPECT_FALSE(verify_backup(f.store).found.has_value());
    }
    {
        backup_fixture f;
        ASSERT_TRUE(f.store.remove(std::string(manifest_name)).ok());
        EXPECT_FALSE(verify_backup(f.store).whole());
    }
}

TEST(BackupFiles, ARestoredObjectAppearsOnlyWithItsDigest) {
    backup_fixture f;
    test::memory_object_store node;
    const file_entry* entry = find_file(f.m, "objects/chunks/00/s/1/0-3");
    ASSERT_NE(entry, nullptr);
    EXPECT_TRUE(restore_object(f.store, *entry, node, "chunks/00/s/1/0-3").ok());
    std::string bytes;
    ASSERT_TRUE(node.get("chunks/00/s/1/0-3", 0, 3, bytes).ok());
    EXPECT_EQ(bytes, "abc");

    f.store.place(entry->path, "abd", 0);  // damaged in the backup
    test::memory_object_store other;
    EXPECT_FALSE(restore_object(f.store, *entry, other, "chunks/00/s/1/0-3").ok());
    auto size = other.size("chunks/00/s/1/0-3");
    ASSERT_TRUE(size.ok());
    EXPECT_FALSE(size->has_value());
}

}  // namespace
}  // namespace dstream::backup
