// Stream forks (base protocol 4.2) through the engine: fork points with
// sub-offsets, reads stitched through chains of sources, soft delete and its
// cascading collection, sources in other groups, and the fork relation in
// checkpoints.
#include <filesystem>
#include <fstream>
#include <optional>
#include <string>
#include <utility>

#include <boost/asio/co_spawn.hpp>
#include <boost/asio/io_context.hpp>
#include <gtest/gtest.h>

#include "base/stable_hash.h"
#include "log/checkpoint_files.h"
#include "cli/node_logs.h"
#include "run_to_end.h"
#include "service/engine.h"

namespace dstream::service {
namespace {

namespace asio = boost::asio;
using protocol::error_code;

constexpr std::size_t group_count = 4;

std::size_t group_of(const std::string& key) { return stable_hash(key) % group_count; }

// A key of the v1 surface named `stem` that hashes to group `g` (or to any
// group other than `not_g`).
std::string key_in_group(const std::string& stem, std::optional<std::size_t> g,
                         std::optional<std::size_t> not_g = std::nullopt) {
    for (int i = 0;; ++i) {
        std::string key = "v1/stream/" + stem + "-" + std::to_string(i);
        if ((!g || group_of(key) == *g) && (!not_g || group_of(key) != *not_g)) return key;
    }
}

struct read_answer {
    std::optional<error_code> refusal;
    std::string bytes;
    std::uint64_t next = 0;
    std::uint64_t tail = 0;
};

class Forks : public ::testing::Test {
protected:
    Forks() : streams(io, group_count, cold_tier{}, checkpointing{}) {
        streams.attach_logs(cli::memory_logs(io.get_executor()));
        streams.start();
    }

    template <typename T>
    T run(asio::awaitable<T> operation) {
        return test::run_to_end(io, std::move(operation));
    }

    // Lets forwarded commands (a fork's release of its source) apply.
    void settle() {
        for (int i = 0; i < 100; ++i) io.poll();
    }

    state::apply_result create(const std::string& key, const std::string& body,
                               const std::string& content_type = "text/plain") {
        state::create_stream c;
        c.key = key;
        c.content_type = content_type;
        c.body = body;
        state::command_body cmd = std::move(c);
        return run(streams.write(cmd));
    }

    state::apply_result fork(const std::string& key, const std::string& source,
                             std::optional<std::uint64_t> offset = std::nullopt,
                             std::uint64_t sub_offset = 0) {
        state::create_stream c;
        c.key = key;
        fork_request f;
        f.source_key = source;
        f.offset = offset;
        f.sub_offset = sub_offset;
        return run(streams.create_fork(c, f));
    }

    state::apply_result append(const std::string& key, const std::string& body) {
        state::append a;
        a.key = key;
        a.body = body;
        a.content_type = "text/plain";
        state::command_body cmd = std::move(a);
        return run(streams.write(cmd));
    }

    state::apply_result remove(const std::string& key) {
        state::command_body cmd = state::delete_stream{key, std::nullopt};
        return run(streams.write(cmd));
    }

    read_answer read(const std::string& key, std::uint64_t from = 0,
                     std::uint64_t max_bytes = 1 << 20) {
        read_request request;
        request.key = key;
        request.start = protocol::read_start{protocol::read_start::kind::position, from};
        request.max_bytes = max_bytes;
        stream_view view = run(streams.read(request));
        read_answer out;
        if (view.refusal) out.refusal = view.refusal->code;
        for (const auto& s : view.data) out.bytes.append(s.view());
        out.next = view.next;
        out.tail = view.tail;
        return out;
    }

    // Every byte from the stream's start, read in pieces of `step` bytes.
    std::string read_all(const std::string& key, std::uint64_t step = 1 << 20) {
        std::string out;
        std::uint64_t at = 0;
        for (;;) {
            read_answer r = read(key, at, step);
            EXPECT_FALSE(r.refusal) << key;
            if (r.refusal) return out;
            out += r.bytes;
            if (r.next == r.tail) return out;
            EXPECT_GT(r.next, at);
            at = r.next;
        }
    }

    asio::io_context io;
    service::engine streams;
};

TEST_F(Forks, ChainOfDepthFourReadsEachLevelsBytesWithoutLaterSourceAppends) {
    const std::string l0 = "v1/stream/l0", l1 = "v1/stream/l1", l2 = "v1/stream/l2",
                      l3 = "v1/stream/l3";
    ASSERT_FALSE(create(l0, "aa").refusal);
    ASSERT_EQ(fork(l1, l0).kind, state::write_kind::created);
    ASSERT_FALSE(append(l1, "bb").refusal);
    ASSERT_EQ(fork(l2, l1).kind, state::write_kind::created);
    ASSERT_FALSE(append(l2, "cc").refusal);
    ASSERT_EQ(fork(l3, l2).kind, state::write_kind::created);
    ASSERT_FALSE(append(l3, "dd").refusal);
    // Appends to sources after the fork points stay invisible to the forks.
    ASSERT_FALSE(append(l0, "XX").refusal);
    ASSERT_FALSE(append(l1, "YY").refusal);

    EXPECT_EQ(read_all(l3), "aabbccdd");
    EXPECT_EQ(read_all(l2), "aabbcc");
    EXPECT_EQ(read_all(l1), "aabbYY");
    EXPECT_EQ(read_all(l0), "aaXX");
    // In pieces that end inside every level, and from offsets inside each.
    EXPECT_EQ(read_all(l3, 1), "aabbccdd");
    EXPECT_EQ(read_all(l3, 3), "aabbccdd");
    EXPECT_EQ(read(l3, 3).bytes, "bccdd");
    EXPECT_EQ(read(l3, 4).bytes, "ccdd");
    EXPECT_EQ(read(l3, 7).bytes, "d");
    const read_answer partial = read(l3, 1, 4);
    EXPECT_EQ(partial.bytes, "abbc");
    EXPECT_EQ(partial.next, 5u);
    EXPECT_EQ(partial.tail, 8u);
}

TEST_F(Forks, BinarySubOffsetCountsBytesPastTheAnchor) {
    const std::string src = "v1/stream/bin";
    ASSERT_FALSE(create(src, "hello").refusal);
    ASSERT_FALSE(append(src, "world").refusal);
    ASSERT_EQ(fork("v1/stream/bin-3", src, 0, 3).kind, state::write_kind::created);
    EXPECT_EQ(read_all("v1/stream/bin-3"), "hel");
    ASSERT_EQ(fork("v1/stream/bin-5-2", src, 5, 2).kind, state::write_kind::created);
    EXPECT_EQ(read_all("v1/stream/bin-5-2"), "hellowo");
    ASSERT_EQ(fork("v1/stream/bin-end", src, 5, 5).kind, state::write_kind::created);
    EXPECT_EQ(read_all("v1/stream/bin-end"), "helloworld");
    const auto over = fork("v1/stream/bin-over", src, 5, 6);
    ASSERT_TRUE(over.refusal);
    EXPECT_EQ(over.refusal->code, error_code::invalid_offset);
    // The fork's own bytes follow its fork point.
    ASSERT_FALSE(append("v1/stream/bin-3", "LO").refusal);
    EXPECT_EQ(read_all("v1/stream/bin-3"), "helLO");
}

TEST_F(Forks, JsonSubOffsetCountsMessagesPastTheAnchor) {
    const std::string src = "v1/stream/json";
    ASSERT_FALSE(
        create(src, "{\"a\":1}\n{\"b\":2}\n{\"c\":3}\n{\"d\":4}\n", "application/json").refusal);
    ASSERT_EQ(fork("v1/stream/json-2", src, 0, 2).kind, state::write_kind::created);
    EXPECT_EQ(read_all("v1/stream/json-2"), "{\"a\":1}\n{\"b\":2}\n");
    // Anchored after the first message, one more.
    ASSERT_EQ(fork("v1/stream/json-8-1", src, 8, 1).kind, state::write_kind::created);
    EXPECT_EQ(read_all("v1/stream/json-8-1"), "{\"a\":1}\n{\"b\":2}\n");
    ASSERT_EQ(fork("v1/stream/json-4", src, 0, 4).kind, state::write_kind::created);
    EXPECT_EQ(read_all("v1/stream/json-4").size(), 32u);
    const auto over = fork("v1/stream/json-5", src, 0, 5);
    ASSERT_TRUE(over.refusal);
    EXPECT_EQ(over.refusal->code, error_code::invalid_offset);
    // Sub-offsets compose through a chain: a fork of a fork counts its messages.
    ASSERT_EQ(fork("v1/stream/json-2-1", "v1/stream/json-2", 0, 1).kind,
              state::write_kind::created);
    EXPECT_EQ(read_all("v1/stream/json-2-1"), "{\"a\":1}\n");
}

TEST_F(Forks, SoftDeleteKeepsBytesForForksAndCollectsUpTheChain) {
    const std::string l0 = "v1/stream/sd0", l1 = "v1/stream/sd1", l2 = "v1/stream/sd2";
    ASSERT_FALSE(create(l0, "A").refusal);
    ASSERT_EQ(fork(l1, l0).kind, state::write_kind::created);
    ASSERT_FALSE(append(l1, "B").refusal);
    ASSERT_EQ(fork(l2, l1).kind, state::write_kind::created);
    ASSERT_FALSE(append(l2, "C").refusal);

    ASSERT_EQ(remove(l0).kind, state::write_kind::deleted);
    ASSERT_EQ(remove(l1).kind, state::write_kind::deleted);
    // Retired: gone to clients, kept for the fork.
    EXPECT_EQ(read(l0).refusal, error_code::stream_gone);
    EXPECT_EQ(read(l1).refusal, error_code::stream_gone);
    EXPECT_EQ(remove(l1).refusal->code, error_code::stream_gone);
    EXPECT_EQ(append(l1, "x").refusal->code, error_code::stream_gone);
    EXPECT_EQ(create(l0, "new").refusal->code, error_code::stream_soft_deleted);
    EXPECT_EQ(fork("v1/stream/sd-late", l1).refusal->code, error_code::stream_soft_deleted);
    EXPECT_EQ(read_all(l2), "ABC");

    // The last fork goes: both retired sources are collected, in a cascade.
    ASSERT_EQ(remove(l2).kind, state::write_kind::deleted);
    settle();
    EXPECT_EQ(read(l2).refusal, error_code::stream_not_found);
    EXPECT_EQ(read(l1).refusal, error_code::stream_not_found);
    EXPECT_EQ(read(l0).refusal, error_code::stream_not_found);
    EXPECT_EQ(create(l0, "new").kind, state::write_kind::created);
}

TEST_F(Forks, SourceInAnotherGroupIsReadAndCollectedByMessage) {
    const std::string source = key_in_group("far-source", 0);
    const std::string fork_key = key_in_group("far-fork", std::nullopt, group_of(source));
    ASSERT_NE(group_of(source), group_of(fork_key));
    ASSERT_FALSE(create(source, "source bytes|").refusal);
    ASSERT_EQ(fork(fork_key, source).kind, state::write_kind::created);
    ASSERT_FALSE(append(fork_key, "fork bytes").refusal);
    EXPECT_EQ(read_all(fork_key), "source bytes|fork bytes");

    ASSERT_EQ(remove(source).kind, state::write_kind::deleted);
    EXPECT_EQ(read(source).refusal, error_code::stream_gone);
    EXPECT_EQ(read_all(fork_key), "source bytes|fork bytes");
    ASSERT_EQ(remove(fork_key).kind, state::write_kind::deleted);
    settle();
    EXPECT_EQ(read(source).refusal, error_code::stream_not_found);
}

TEST_F(Forks, ARefusedForkReleasesItsReferenceButNotAnExistingForks) {
    const std::string source = "v1/stream/ref-src", taken = "v1/stream/ref-taken",
                      f = "v1/stream/ref-fork";
    ASSERT_FALSE(create(source, "abc").refusal);
    ASSERT_FALSE(create(taken, "").refusal);
    // The URL holds a plain stream: the fork is refused, its reference dropped.
    EXPECT_EQ(fork(taken, source).refusal->code, error_code::stream_already_exists_conflict);
    // A fork, then a refused re-create of it at another point, then an
    // idempotent one: the fork's own reference stays through both.
    ASSERT_EQ(fork(f, source, 1).kind, state::write_kind::created);
    EXPECT_EQ(fork(f, source, 2).refusal->code, error_code::stream_already_exists_conflict);
    EXPECT_EQ(fork(f, source, 1).kind, state::write_kind::already_exists);
    settle();
    ASSERT_EQ(remove(source).kind, state::write_kind::deleted);
    EXPECT_EQ(read(source).refusal, error_code::stream_gone);  // retired: the fork holds it
    EXPECT_EQ(read_all(f), "a");
    ASSERT_EQ(remove(f).kind, state::write_kind::deleted);
    settle();
    EXPECT_EQ(read(source).refusal, error_code::stream_not_found);  // no leaked reference
}

TEST_F(Forks, ForkPointBeyondTheTailAndMissingSourcesAreRefused) {
    ASSERT_FALSE(create("v1/stream/short", "ab").refusal);
    EXPECT_EQ(fork("v1/stream/f", "v1/stream/short", 3).refusal->code, error_code::invalid_offset);
    EXPECT_EQ(fork("v1/stream/f", "v1/stream/none").refusal->code, error_code::stream_not_found);
    EXPECT_EQ(read("v1/stream/f").refusal, error_code::stream_not_found);
}

// The fork relation and retired streams survive a checkpoint.
TEST(ForkCheckpoint, ForksAndRetiredStreamsRoundTrip) {
    state::group_state g;
    std::uint64_t index = 0;
    const auto apply = [&](state::command_body body) {
        return g.apply(state::command{1000, std::move(body)}, ++index);
    };
    state::create_stream source;
    source.key = "v1/stream/src";
    source.content_type = "text/plain";
    source.body = "abc";
    apply(source);
    const std::uint64_t token = g.find("v1/stream/src")->incarnation;
    ASSERT_FALSE(
        apply(state::add_fork_ref{"v1/stream/src", token, 2, "v1/stream/fork", 99}).refusal);
    state::create_stream fork = source;
    fork.key = "v1/stream/fork";
    fork.body = "Z";
    fork.fork = state::fork_origin{"v1/stream/src", token, 2, 99};
    ASSERT_EQ(apply(fork).kind, state::write_kind::created);
    ASSERT_EQ(apply(state::delete_stream{"v1/stream/src", std::nullopt}).kind,
              state::write_kind::deleted);
    ASSERT_TRUE(g.retired("v1/stream/src"));

    const auto dir = std::filesystem::temp_directory_path() /
                     ("dstream-fork-ckpt-" + std::to_string(::getpid()));
    std::filesystem::remove_all(dir);
    log::checkpoint_files files(dir);
    ASSERT_TRUE(files.write(3, index, "log header", g.capture_checkpoint(3, index)).ok());
    const auto newest = files.newest();
    ASSERT_EQ(newest.count(3), 1u);
    auto loaded = files.load(newest.at(3));
    ASSERT_TRUE(loaded.ok());
    EXPECT_EQ(loaded->header, "log header");
    const std::string bytes = loaded->image;
    std::uint32_t group = 0;
    std::uint64_t restored_index = 0;
    auto restored = state::group_state::restore_checkpoint(bytes, group, restored_index);
    std::filesystem::remove_all(dir);
    ASSERT_TRUE(restored.ok()) << restored.err().message;
    EXPECT_TRUE(restored->retired("v1/stream/src"));
    const state::stream* src = restored->find_source("v1/stream/src", token);
    ASSERT_NE(src, nullptr);
    EXPECT_EQ(src->forks.size(), 1u);
    EXPECT_EQ(src->forks.at(99), "v1/stream/fork");
    const state::stream* f = restored->find("v1/stream/fork");
    ASSERT_NE(f, nullptr);
    ASSERT_TRUE(f->origin);
    EXPECT_TRUE(f->origin->same_point(state::fork_origin{"v1/stream/src", token, 2, 0}));
    EXPECT_EQ(f->origin->reference, 99u);
    EXPECT_EQ(f->tail(), 3u);
    // The last fork goes: the retired source is collected from the restored state too.
    auto gone = restored->apply(
        state::command{1000, state::delete_stream{"v1/stream/fork", std::nullopt}}, index + 1);
    ASSERT_TRUE(gone.released);
    auto collected = restored->apply(
        state::command{1000,
                       state::drop_fork_ref{"v1/stream/src", token, gone.released->reference}},
        index + 2);
    EXPECT_FALSE(restored->retired("v1/stream/src"));
    EXPECT_EQ(restored->find_any("v1/stream/src"), nullptr);
    (void)collected;
}

}  // namespace
}  // namespace dstream::service
