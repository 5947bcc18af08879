// The local directory object store: whole objects or none, streamed writers,
// sizes and listings (the cold tier's interface, S3-shaped).
#include <algorithm>
#include <chrono>
#include <filesystem>
#include <random>
#include <string>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include "page_cache.h"
#include "storage/local_dir_object_store.h"
#include "storage/metered_object_store.h"

namespace dstream::storage {
namespace {

namespace fs = std::filesystem;

class ObjectStore : public ::testing::Test {
protected:
    void SetUp() override {
        std::random_device rd;
        _root = fs::temp_directory_path() / ("dstream-object-store-" + std::to_string(rd()));
        store = std::make_unique<local_dir_object_store>(_root);
    }
    void TearDown() override { fs::remove_all(_root); }

    // Every file under the store's directory, temporary ones included.
    std::size_t files_on_disk() const {
        return static_cast<std::size_t>(std::count_if(
            fs::recursive_directory_iterator(_root), fs::recursive_directory_iterator(),
            [](const auto& e) { return e.is_regular_file(); }));
    }

    std::unique_ptr<object_writer> open_writer(const std::string& key) {
        auto opened = store->open_writer(key);
        EXPECT_TRUE(opened);
        return std::move(opened).value();
    }

    const fs::path& root() const { return _root; }

    std::unique_ptr<local_dir_object_store> store;

private:
    fs::path _root;
};

TEST_F(ObjectStore, PutGetSizeRemove) {
    ASSERT_TRUE(store->put("a/b/c", "hello world"));
    EXPECT_EQ(*store->size("a/b/c"), std::optional<std::uint64_t>(11));
    std::string out;
    ASSERT_TRUE(store->get("a/b/c", 6, 5, out));
    EXPECT_EQ(out, "world");
    ASSERT_TRUE(store->remove("a/b/c"));
    EXPECT_EQ(*store->size("a/b/c"), std::nullopt);
    EXPECT_FALSE(store->get("a/b/c", 0, 1, out));
    EXPECT_TRUE(store->remove("a/b/c")) << "removing an absent object succeeds";
}

// An object's file, for reads sent from it: its bytes, still readable after
// the object is removed (the read in flight keeps its descriptor).
TEST_F(ObjectStore, AnOpenFileReadsTheObjectEvenAfterItsRemoval) {
    ASSERT_TRUE(store->put("chunks/k", "hello world"));
    const std::shared_ptr<const object_file> file = store->open_file("chunks/k");
    ASSERT_NE(file, nullptr);
    ASSERT_TRUE(store->remove("chunks/k"));
    char bytes[5] = {};
    ASSERT_EQ(::pread(file->fd(), bytes, sizeof bytes, 6), 5);
    EXPECT_EQ(std::string(bytes, sizeof bytes), "world");
    EXPECT_EQ(store->open_file("chunks/absent"), nullptr);
}

// Keeps what a read hands it, piece by piece.
struct kept_pieces final : range_sink {
    bool write(std::string_view bytes) override {
        pieces.emplace_back(bytes);
        return true;
    }
    std::vector<std::string> pieces;
};

// A store that keeps files does not stream: its range comes whole, as a get.
TEST_F(ObjectStore, AStoreThatDoesNotStreamHandsTheRangeOverWhole) {
    ASSERT_TRUE(store->put("k", "hello world"));
    EXPECT_FALSE(store->streams_ranges());
    kept_pieces sink;
    ASSERT_TRUE(store->stream_range("k", 6, 5, sink));
    EXPECT_EQ(sink.pieces, std::vector<std::string>{"world"});
    EXPECT_FALSE(store->stream_range("missing", 0, 1, sink));
    EXPECT_EQ(sink.pieces.size(), 1u);
}

// The metered store counts the object bytes each call moves, by operation.
TEST_F(ObjectStore, TheMeteredStoreCountsBytesByOperation) {
    metered_object_store metered(*store);
    auto& m = storage_metrics::get();
    const auto bytes_of = [&](object_op op) { return m.of(op).bytes.value(); };
    const std::uint64_t put = bytes_of(object_op::put), got = bytes_of(object_op::get),
                        written = bytes_of(object_op::open_writer),
                        streamed = bytes_of(object_op::stream_range);
    ASSERT_TRUE(metered.put("k", "hello world"));
    std::string out;
    ASSERT_TRUE(metered.get("k", 0, 5, out));
    EXPECT_FALSE(metered.get("missing", 0, 5, out));
    auto writer = metered.open_writer("w");
    ASSERT_TRUE(writer);
    ASSERT_TRUE((*writer)->write("abc"));
    ASSERT_TRUE((*writer)->write("de"));
    ASSERT_TRUE((*writer)->finish());
    kept_pieces sink;
    EXPECT_EQ(metered.streams_ranges(), store->streams_ranges());
    ASSERT_TRUE(metered.stream_range("w", 1, 3, sink));
    EXPECT_EQ(bytes_of(object_op::put), put + 11);
    EXPECT_EQ(bytes_of(object_op::get), got + 5);
    EXPECT_EQ(bytes_of(object_op::open_writer), written + 5);
    EXPECT_EQ(bytes_of(object_op::stream_range), streamed + 3);
    EXPECT_EQ(m.of(object_op::put).retries.value(), 0u);
}

// Cold bytes are read rarely and later: a written object's pages leave the
// page cache once the object is durable, and its bytes read back whole.
TEST_F(ObjectStore, AWrittenObjectLeavesThePageCache) {
    if (!test::shows_dropped_pages(root())) GTEST_SKIP() << "no page cache to see here";
    const std::string bytes(1 << 20, 'c');
    ASSERT_TRUE(store->put("chunks/a/b", bytes));
    EXPECT_EQ(test::cached_pages(root() / "chunks/a/b"), 0u);
    std::string back;
    ASSERT_TRUE(store->get("chunks/a/b", 0, bytes.size(), back));
    EXPECT_EQ(back, bytes);
}

TEST_F(ObjectStore, AbsentObjectsHaveNoSize) {
    EXPECT_EQ(*store->size("nothing/here"), std::nullopt);
    ASSERT_TRUE(store->put("dir/object", "x"));
    EXPECT_EQ(*store->size("dir"), std::nullopt) << "a directory is no object";
    EXPECT_EQ(*store->size("dir/object/below"), std::nullopt);
}

TEST_F(ObjectStore, AWriterIsInvisibleUntilFinishedThenWhole) {
    auto writer = open_writer("big/one");
    std::string expected;
    for (int i = 0; i < 50; ++i) {
        const std::string piece(1000 + i, static_cast<char>('a' + i % 26));
        ASSERT_TRUE(writer->write(piece));
        expected += piece;
    }
    EXPECT_EQ(*store->size("big/one"), std::nullopt);
    EXPECT_TRUE(store->list("big/")->empty());
    ASSERT_TRUE(writer->finish());
    writer.reset();
    EXPECT_EQ(*store->size("big/one"), std::optional<std::uint64_t>(expected.size()));
    std::string out;
    ASSERT_TRUE(store->get("big/one", 0, expected.size(), out));
    EXPECT_EQ(out, expected);
    EXPECT_EQ(files_on_disk(), 1u);
}

TEST_F(ObjectStore, AnAbandonedWriterLeavesNothing) {
    {
        auto writer = open_writer("gone/one");
        ASSERT_TRUE(writer->write("partial"));
    }
    EXPECT_EQ(*store->size("gone/one"), std::nullopt);
    EXPECT_EQ(files_on_disk(), 0u) << "the temporary file is removed";
}

TEST_F(ObjectStore, AnAbandonedWriterKeepsTheObjectItWouldHaveReplaced) {
    ASSERT_TRUE(store->put("k", "old"));
    {
        auto writer = open_writer("k");
        ASSERT_TRUE(writer->write("new bytes"));
    }
    std::string out;
    ASSERT_TRUE(store->get("k", 0, 3, out));
    EXPECT_EQ(out, "old");
}

TEST_F(ObjectStore, OverlappingWritersOfOneKeyDoNotMix) {
    auto first = open_writer("same");
    auto second = open_writer("same");
    ASSERT_TRUE(first->write("first"));
    ASSERT_TRUE(second->write("second!"));
    ASSERT_TRUE(first->finish());
    ASSERT_TRUE(second->finish());
    EXPECT_EQ(*store->size("same"), std::optional<std::uint64_t>(7)) << "the last to finish wins";
}

TEST_F(ObjectStore, ListNamesObjectsWithSizesUnderAPrefixOnly) {
    ASSERT_TRUE(store->put("parts/aa/1/x", "12345"));
    ASSERT_TRUE(store->put("parts/aa/2/y", ""));
    ASSERT_TRUE(store->put("parts/bb/1/z", "1"));
    ASSERT_TRUE(store->put("chunks/aa/1/w", "1"));
    auto pending = open_writer("parts/aa/3/unfinished");
    ASSERT_TRUE(pending->write("abc"));
    auto listed = store->list("parts/aa/");
    ASSERT_TRUE(listed);
    std::sort(listed->begin(), listed->end(),
              [](const auto& a, const auto& b) { return a.key < b.key; });
    ASSERT_EQ(listed->size(), 2u);
    EXPECT_EQ((*listed)[0].key, "parts/aa/1/x");
    EXPECT_EQ((*listed)[0].size, 5u);
    EXPECT_EQ((*listed)[1].key, "parts/aa/2/y");
    EXPECT_EQ((*listed)[1].size, 0u);
    EXPECT_TRUE(store->list("nothing/")->empty());
}

// The orphan sweep judges an object's age by it.
TEST_F(ObjectStore, ListCarriesWhenEachObjectWasWritten) {
    ASSERT_TRUE(store->put("chunks/old", "1"));
    ASSERT_TRUE(store->put("chunks/new", "2"));
    const auto an_hour_ago = fs::file_time_type::clock::now() - std::chrono::hours(1);
    fs::last_write_time(root() / "chunks/old", an_hour_ago);
    const auto now_ms = std::chrono::duration_cast<std::chrono::milliseconds>(
                            std::chrono::system_clock::now().time_since_epoch())
                            .count();
    auto listed = store->list("chunks/");
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 2u);
    for (const auto& entry : *listed) {
        const std::int64_t age_ms = now_ms - entry.modified_ms;
        if (entry.key == "chunks/old") {
            EXPECT_NEAR(age_ms, 3'600'000, 60'000);
        } else {
            EXPECT_NEAR(age_ms, 0, 60'000);
        }
    }
}

TEST_F(ObjectStore, ARootGivenWithATrailingSlashListsTheSameKeys) {
    local_dir_object_store slashed(root().string() + "/");
    ASSERT_TRUE(slashed.put("parts/aa/1/x", "12345"));
    auto listed = slashed.list("parts/");
    ASSERT_TRUE(listed);
    ASSERT_EQ(listed->size(), 1u);
    EXPECT_EQ((*listed)[0].key, "parts/aa/1/x");
}

// A stream deleted while its snapshot's parts are listed (a commit's copy,
// the sweep) removes them mid-listing: the listing leaves them out. It once
// resolved each name against the disk and threw, which ended the process.
TEST_F(ObjectStore, AListingWhileObjectsAreRemovedLeavesThemOut) {
    constexpr int objects = 200;
    // Stopped and joined however the test ends.
    std::jthread churn([&](const std::stop_token& stop) {
        while (!stop.stop_requested()) {
            for (int i = 0; i < objects; ++i)
                (void)store->put("parts/aa/" + std::to_string(i), "x");
            for (int i = 0; i < objects; ++i) (void)store->remove("parts/aa/" + std::to_string(i));
        }
    });
    int failed_listings = 0;
    std::string stray_key;
    const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(500);
    while (std::chrono::steady_clock::now() < until) {
        auto listed = store->list("parts/aa/");
        if (!listed) {
            ++failed_listings;
            continue;
        }
        for (const auto& entry : *listed) {
            if (!entry.key.starts_with("parts/aa/")) stray_key = entry.key;
        }
    }
    churn.request_stop();
    churn.join();
    EXPECT_EQ(failed_listings, 0);
    EXPECT_EQ(stray_key, "");
}

}  // namespace
}  // namespace dstream::storage
