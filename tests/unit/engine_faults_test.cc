// A durable node on a failing disk, through the engine (the service the HTTP
// edge calls), composed as `dstream serve` composes it: WAL, checkpoints and
// the cold tier on tests/support/faulty_file_io.h. A write is either
// acknowledged, and then survives a crash, or refused with a code that proves
// it (503 WAL_DISK_PRESSURE at the edge), and then absent; the node goes on
// once the fault clears, with offsets that continue without a gap.
#include <condition_variable>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <gtest/gtest.h>

#include "cli/recovery.h"
#include "edge/write_answer.h"
#include "faulty_file_io.h"
#include "cli/node_logs.h"
#include "protocol/digest.h"
#include "run_to_end.h"
#include "service/engine.h"
#include "storage/local_dir_object_store.h"
#include "temp_dir.h"

namespace dstream::service {
namespace {

namespace asio = boost::asio;
namespace fs = std::filesystem;
using protocol::error_code;
using test::fault;
using test::faulty_file_io;
using test::file_op;

constexpr auto deadline = std::chrono::seconds(20);
constexpr std::string_view content_type = "application/octet-stream";

struct node_options {
    std::uint64_t chunk_bytes = 4u << 20;
    std::uint64_t checkpoint_bytes = 64u << 20;
    std::uint64_t segment_bytes = 32u << 20;
};

// One durable node in this process, started as src/cli/main.cc starts it
// (recovery, logs, WAL, engine), on the file calls `io`. The test's thread
// runs the groups; blocking cold-tier and checkpoint I/O runs on a pool.
class node {
public:
    node(const fs::path& dir, file_io& io, const node_options& options)
        : _store(dir / "objects", io),
          _checkpoints(dir / "checkpoints", io),
          _engine(_io, 2, cold(options), checkpointing{true, options.checkpoint_bytes}),
          _wal(log::wal_options{dir / "wal", options.segment_bytes, 4}, io) {
        std::vector<cli::recovered_log> recovered =
            cli::recover(_engine, _checkpoints, _wal, cli::single_node_voters);
        _engine.attach_logs(cli::wal_logs(_wal, _checkpoints, _pool.get_executor(), recovered));
        _wal.start();
        cli::release_checkpointed(_wal, recovered);
        _engine.start();
        settle(std::chrono::milliseconds(20));  // the groups' first records
    }
    ~node() {
        _pool.join();
        _wal.stop();
    }

    template <typename T>
    T run(asio::awaitable<T> operation) {
        return test::run_to_end(_io, std::move(operation));
    }
    // Runs the groups for `period`: background work (flushes, checkpoints) lands.
    void settle(std::chrono::milliseconds period) { _io.run_for(period); }
    // Runs the groups until `done` holds.
    template <typename Predicate>
    bool settle_until(Predicate done) {
        const auto until = std::chrono::steady_clock::now() + deadline;
        while (!done()) {
            if (std::chrono::steady_clock::now() > until) return false;
            _io.run_for(std::chrono::milliseconds(5));
        }
        return true;
    }

    state::apply_result write(state::command_body body) { return run(_engine.write(body)); }
    state::apply_result create(const std::string& key) {
        state::create_stream c;
        c.key = key;
        c.content_type = content_type;
        return write(std::move(c));
    }
    state::apply_result append(const std::string& key, const std::string& bytes) {
        state::append a;
        a.key = key;
        a.content_type = content_type;
        a.body = bytes;
        return write(std::move(a));
    }
    state::apply_result publish(const std::string& key, std::uint64_t offset,
                                const std::string& body) {
        state::publish_snapshot p;
        p.key = key;
        p.offset = offset;
        p.content_type = content_type;
        p.digest = protocol::snapshot_digest(p.content_type, body);
        p.size = body.size();
        p.body = body;
        return write(std::move(p));
    }
    // The whole snapshot body at `offset`, or the refusal.
    result<std::string> read_snapshot(const std::string& key, std::uint64_t offset) {
        const snapshot_view view = run(_engine.read_snapshot(key, offset, 0, 64u << 20));
        if (view.refusal) return *view.refusal;
        std::string out;
        for (const auto& slice : view.body) out.append(slice.view());
        return out;
    }
    // Every byte of the stream, or the refusal of the read that failed.
    result<std::string> read_all(const std::string& key) {
        std::string out;
        for (std::uint64_t at = 0;;) {
            read_request request;
            request.key = key;
            request.start = protocol::read_start{protocol::read_start::kind::position, at};
            request.max_bytes = 1 << 20;
            const stream_view view = run(_engine.read(request));
            if (view.refusal) return *view.refusal;
            for (const auto& slice : view.data) out.append(slice.view());
            if (view.next == view.tail) return out;
            at = view.next;
        }
    }

private:
    cold_tier cold(const node_options& options) {
        cold_tier c;
        c.store = &_store;
        c.cache = &_cache;
        c.io = _pool.get_executor();
        c.chunk_bytes = options.chunk_bytes;
        // The faults come and go within milliseconds: flushes retry as soon.
        c.flush_retry_base = std::chrono::milliseconds(1);
        c.flush_retry_cap = std::chrono::milliseconds(4);
        return c;
    }

    asio::io_context _io;
    asio::executor_work_guard<asio::io_context::executor_type> _guard{_io.get_executor()};
    asio::thread_pool _pool{2};
    storage::local_dir_object_store _store;
    storage::chunk_cache _cache{64u << 20};
    log::checkpoint_files _checkpoints;
    engine _engine;
    log::node_wal _wal;
};

// What the edge answers a write with (src/edge/write_answer.cc): an append,
// or a snapshot publish.
edge::response edge_answer(const state::apply_result& r, bool publish = false) {
    asio::io_context io;
    edge::connection_stream stream{edge::connection_executor(io)};
    edge::request req{boost::beast::http::verb::post, "/v1/stream/s", 11};
    edge::edge_options options;
    edge::answer_summary summary;
    const edge::exchange ex(stream, req, edge::route{}, edge::query_params{}, nullptr,
                            options, summary);
    return publish ? edge::render_publish_answer(ex, r) : edge::render_append_answer(ex, r, false);
}

class EngineFaults : public ::testing::Test {
protected:
    void start(const node_options& options = {}) { n.emplace(dir.path(), io, options); }
    // Starts the node with `stream` created, empty.
    void start_with_stream(const node_options& options = {}) {
        start(options);
        ASSERT_FALSE(n->create(stream).refusal);
    }
    // The node dies; the disk keeps what it had made durable; the node starts
    // again on healthy calls.
    void crash_and_restart(const node_options& options = {}) {
        n.reset();
        io.crash();
        start(options);
    }
    // Appends and checks the answer against `model` (the stream's acknowledged
    // bytes): acknowledged at its tail, or refused with a code that proves it.
    bool append(const std::string& key, const std::string& bytes, std::string& model) {
        const state::apply_result r = n->append(key, bytes);
        if (r.refusal) {
            EXPECT_TRUE(protocol::proves_refusal(r.refusal->code))
                << protocol::wire_code(r.refusal->code);
            EXPECT_EQ(r.refusal->code, error_code::wal_disk_pressure);
            return false;
        }
        EXPECT_EQ(r.start_offset, model.size()) << "no gap, no duplicate";
        model += bytes;
        EXPECT_EQ(r.next_offset, model.size());
        return true;
    }
    std::size_t files_under(const fs::path& sub) const {
        std::size_t count = 0;
        std::error_code ec;
        for (auto it = fs::recursive_directory_iterator(dir.path() / sub, ec);
             !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
            count += it->is_regular_file() ? 1 : 0;
        }
        return count;
    }

    const std::string stream = "v1/stream/s";
    test::temp_dir dir{"dstream-engine-faults"};
    faulty_file_io io{dir.path()};
    std::optional<node> n;
};

TEST_F(EngineFaults, AnAppendTheDiskCannotTakeIsAnswered503AndTheStreamGoesOn) {
    const std::vector<std::pair<const char*, std::pair<file_op, fault>>> cases = {
        {"full disk", {file_op::write, fault::fail(ENOSPC)}},
        {"I/O error", {file_op::write, fault::fail(EIO)}},
        {"torn write", {file_op::write, fault::torn_write(25, EIO)}},
        {"failed flush", {file_op::sync, fault::fail(EIO)}},
    };
    start_with_stream();
    std::string model;
    ASSERT_TRUE(append(stream, "first;", model));
    for (const auto& [name, what] : cases) {
        SCOPED_TRACE(name);
        io.inject(what.first, ".wal", what.second);
        const state::apply_result refused = n->append(stream, std::string("lost-") + name + ";");
        ASSERT_TRUE(refused.refusal);
        EXPECT_EQ(refused.refusal->code, error_code::wal_disk_pressure);
        const edge::response answer = edge_answer(refused);
        EXPECT_EQ(answer.result_int(), 503u);
        EXPECT_NE(answer.body().find("\"WAL_DISK_PRESSURE\""), std::string::npos) << answer.body();
        EXPECT_EQ(answer[boost::beast::http::field::retry_after], "1");
        EXPECT_TRUE(protocol::proves_refusal(refused.refusal->code));
        EXPECT_TRUE(append(stream, std::string("kept-") + name + ";", model))
            << "the fault cleared";
        EXPECT_EQ(*n->read_all(stream), model);
    }
    crash_and_restart();
    EXPECT_EQ(*n->read_all(stream), model);
    EXPECT_TRUE(append(stream, "after;", model));
    EXPECT_EQ(*n->read_all(stream), model);
}

// A snapshot body of 1 MiB or more goes to the cold tier before its command
// is logged: when the object cannot be written, the publish is answered 502
// COLD_STORE_FAILED and nothing is published; repeating it works.
TEST_F(EngineFaults, ASnapshotTheColdStoreCannotTakeIsAnswered502AndNothingIsPublished) {
    start_with_stream();
    std::string model;
    ASSERT_TRUE(append(stream, "abc", model));
    const std::string body(snapshot_inline_limit, 's');
    for (const fault f : {fault::fail(ENOSPC), fault::torn_write(4096, EIO)}) {
        io.inject(file_op::write, "/objects/snapshots/", f);
        const state::apply_result refused = n->publish(stream, 3, body);
        ASSERT_TRUE(refused.refusal);
        EXPECT_EQ(refused.refusal->code, error_code::cold_store_failed);
        EXPECT_EQ(edge_answer(refused, true).result_int(), 502u);
        const auto nothing = n->read_snapshot(stream, 3);
        ASSERT_FALSE(nothing);
        EXPECT_EQ(nothing.err().code, error_code::snapshot_not_found);
    }
    ASSERT_FALSE(n->publish(stream, 3, body).refusal) << "the repeat";
    EXPECT_EQ(*n->read_snapshot(stream, 3), body);
    crash_and_restart();
    EXPECT_EQ(*n->read_snapshot(stream, 3), body);
    EXPECT_EQ(*n->read_all(stream), model);
}

// Faults at random on every durable path (WAL, checkpoints, chunks) while
// three streams take appends: whatever was acknowledged is there after a
// crash, in order, exactly once, and nothing refused is.
TEST_F(EngineFaults, NothingAcknowledgedIsLostUnderRandomFaults) {
    const std::vector<std::pair<file_op, fault>> faults = {
        {file_op::write, fault::fail(ENOSPC)},   {file_op::write, fault::fail(EIO)},
        {file_op::write, fault::torn_write(40)}, {file_op::write, fault::short_write(30)},
        {file_op::sync, fault::fail(EIO)},       {file_op::rename, fault::fail(EIO)},
        {file_op::sync_dir, fault::fail(EIO)},   {file_op::open, fault::fail(ENOSPC)},
    };
    const std::vector<std::string> places = {".wal", ".ckpt", "/objects/"};
    node_options options;
    options.chunk_bytes = 2048;
    options.checkpoint_bytes = 1024;
    options.segment_bytes = 4096;
    start(options);
    std::mt19937 random(9);
    const std::vector<std::string> keys = {"v1/stream/a", "v1/stream/b", "v1/stream/c"};
    std::map<std::string, std::string> models;
    for (const auto& key : keys) ASSERT_FALSE(n->create(key).refusal);
    int refused = 0;
    for (int i = 0; i < 300; ++i) {
        if (random() % 4 == 0) {
            const auto& [op, f] = faults[random() % faults.size()];
            io.inject(op, places[random() % places.size()], f);
        }
        const std::string& key = keys[random() % keys.size()];
        const std::string bytes(10 + random() % 200, static_cast<char>('a' + i % 26));
        if (!append(key, bytes, models[key])) ++refused;
        if (i % 50 == 49) {
            // A fault still pending could hit the check's own reads of chunks
            // (when a slow machine delayed the flush it was meant for).
            io.clear();
            n->settle(std::chrono::milliseconds(10));
            for (const auto& k : keys) EXPECT_EQ(*n->read_all(k), models[k]);
        }
    }
    EXPECT_GT(refused, 0);
    EXPECT_GT(files_under("objects/chunks"), 0u);
    io.clear();
    n->settle(std::chrono::milliseconds(50));
    crash_and_restart(options);
    for (const auto& key : keys) {
        EXPECT_EQ(*n->read_all(key), models[key]) << key;
        EXPECT_TRUE(append(key, "after", models[key]));
    }
    crash_and_restart(options);
    for (const auto& key : keys) EXPECT_EQ(*n->read_all(key), models[key]) << key;
}

// While checkpoints fail, the WAL segments they would have covered stay: a
// crash recovers everything from the last good checkpoint and the log.
TEST_F(EngineFaults, FailingCheckpointsKeepThePreviousOneAndTheLog) {
    node_options options;
    options.checkpoint_bytes = 512;
    options.segment_bytes = 2048;
    start_with_stream(options);
    std::string model;
    for (int i = 0; i < 20; ++i) ASSERT_TRUE(append(stream, std::string(100, 'a'), model));
    ASSERT_TRUE(n->settle_until([&] { return files_under("checkpoints") > 0; }));
    io.inject(file_op::sync, ".ckpt", fault::fail(EIO), -1);
    for (int i = 0; i < 60; ++i) ASSERT_TRUE(append(stream, std::string(100, 'b' + i % 20), model));
    n->settle(std::chrono::milliseconds(50));
    EXPECT_GT(io.fired(), 0) << "checkpoints were tried and failed";
    EXPECT_EQ(*n->read_all(stream), model);
    crash_and_restart(options);
    EXPECT_EQ(*n->read_all(stream), model);
    ASSERT_TRUE(append(stream, "after", model));
    EXPECT_EQ(*n->read_all(stream), model);
}

// A chunk that cannot be written leaves its bytes in memory, readable; the
// flush is tried again once the disk recovers, and the chunk then holds them.
TEST_F(EngineFaults, AChunkThatCannotBeWrittenStaysHotAndIsFlushedLater) {
    node_options options;
    options.chunk_bytes = 1024;
    start_with_stream(options);
    std::string model;
    io.inject(file_op::write, "/objects/chunks/", fault::fail(ENOSPC), -1);
    for (int i = 0; i < 30; ++i) ASSERT_TRUE(append(stream, std::string(100, 'a' + i % 26), model));
    n->settle(std::chrono::milliseconds(50));
    EXPECT_GT(io.fired(), 0);
    EXPECT_EQ(files_under("objects/chunks"), 0u);
    EXPECT_EQ(*n->read_all(stream), model);
    io.clear();
    ASSERT_TRUE(append(stream, "retry", model));
    ASSERT_TRUE(n->settle_until([&] { return files_under("objects/chunks") > 0; }));
    n->settle(std::chrono::milliseconds(50));
    EXPECT_EQ(*n->read_all(stream), model);
    crash_and_restart(options);
    EXPECT_EQ(*n->read_all(stream), model);
}

// A chunk written whose log record is refused is garbage and gets removed;
// the removal must not catch the same chunk written again by the retry.
TEST_F(EngineFaults, ARefusedChunkIsNotRemovedFromUnderItsRetry) {
    std::mutex mutex;
    std::condition_variable changed;
    bool hold_writes = true;
    bool hold_removals = true;
    int removals_waiting = 0;
    io.set_hook([&](file_op op, const std::string& path) {
        if (path.find("/objects/chunks/") == std::string::npos) return;
        std::unique_lock lock(mutex);
        if (op == file_op::open) {
            changed.wait(lock, [&] { return !hold_writes; });
        } else if (op == file_op::unlink && hold_removals) {
            ++removals_waiting;
            changed.notify_all();
            changed.wait(lock, [&] { return !hold_removals; });
        }
    });
    const auto let = [&](bool& hold) {
        std::lock_guard lock(mutex);
        hold = false;
        changed.notify_all();
    };
    node_options options;
    options.chunk_bytes = 1024;
    start_with_stream(options);
    std::string model;
    // One hot block of exactly one chunk: once flushed, only the chunk holds it.
    ASSERT_TRUE(append(stream, std::string(1024, 'a'), model));  // the chunk's write waits
    io.inject(file_op::write, ".wal", fault::fail(ENOSPC));      // for its log record
    let(hold_writes);
    ASSERT_TRUE(n->settle_until([&] {
        std::lock_guard lock(mutex);
        return removals_waiting > 0;
    })) << "the refused chunk's removal";
    ASSERT_TRUE(append(stream, std::string(100, 'b'), model));
    n->settle(std::chrono::milliseconds(100));
    let(hold_removals);
    // The refused chunk goes first: a check made before it is gone would
    // count it as the retried one.
    ASSERT_TRUE(n->settle_until([&] { return files_under("objects/chunks") == 0; }))
        << "the refused chunk's removal";
    // Each append past the chunk grid tries the flush again (once the
    // removal is done); the chunk ends up written and referenced.
    for (int i = 0; i < 50 && files_under("objects/chunks") == 0; ++i) {
        ASSERT_TRUE(append(stream, std::string(10, 'c'), model));
        n->settle(std::chrono::milliseconds(20));
    }
    EXPECT_EQ(files_under("objects/chunks"), 1u) << "the chunk the log references is gone";
    n->settle(std::chrono::milliseconds(50));
    const auto before = n->read_all(stream);
    ASSERT_TRUE(before) << protocol::wire_code(before.err().code);
    EXPECT_EQ(*before, model);
    crash_and_restart(options);
    const auto after = n->read_all(stream);
    ASSERT_TRUE(after) << protocol::wire_code(after.err().code);
    EXPECT_EQ(*after, model);
}

}  // namespace
}  // namespace dstream::service
