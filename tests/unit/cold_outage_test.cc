// A node whose cold store goes away (an S3 outage) and comes back, through
// the engine the edge calls: writes go on into memory up to the group's hot
// budget, then are refused with 503 COLD_BACKPRESSURE and Retry-After; a read
// of cold bytes is refused the same way, never answered partially; once the
// store is back the groups flush by themselves and every acknowledged byte
// reads back as it was written. On a store that streams (S3), a catch-up read
// sends the cold bytes as the store hands them on, loads no chunk whole, and
// is refused the same way when the store gives no first byte.
#include <string>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/thread_pool.hpp>
#include <gtest/gtest.h>

#include "cli/node_logs.h"
#include "edge/write_answer.h"
#include "memory_object_store.h"
#include "run_to_end.h"
#include "service/cold_reads.h"
#include "service/engine.h"
#include "service/service_metrics.h"

namespace dstream::service {
namespace {

namespace asio = boost::asio;
using namespace std::chrono_literals;
using protocol::error_code;

constexpr std::string_view content_type = "application/octet-stream";
constexpr std::uint64_t chunk_bytes = 1024;
constexpr std::uint64_t hot_budget = 8 * 1024;
const std::string stream = "/v1/stream/outage";

class ColdOutage : public ::testing::Test {
protected:
    ColdOutage() : _engine(_io, 1, cold(), checkpointing{}) {
        _engine.attach_logs(cli::memory_logs(_pool.get_executor()));
        _engine.start();
        _io.run_for(20ms);  // the group's first records
        state::create_stream c;
        c.key = stream;
        c.content_type = content_type;
        EXPECT_FALSE(write(std::move(c)).refusal);
    }
    ~ColdOutage() override {
        store.set_stalled(false);
        _pool.join();
    }

    state::apply_result write(state::command_body body) {
        return test::run_to_end(_io, _engine.write(body));
    }
    // Appends; on success `model` (the acknowledged bytes) grows by `bytes`.
    state::apply_result append(const std::string& bytes) {
        state::append a;
        a.key = stream;
        a.content_type = content_type;
        a.body = bytes;
        state::apply_result r = write(std::move(a));
        if (!r.refusal) {
            EXPECT_EQ(r.start_offset, model.size()) << "no gap, no duplicate";
            model += bytes;
        }
        return r;
    }
    // A catch-up read from `at` as the edge makes it.
    stream_view catch_up(std::uint64_t at) {
        read_request request;
        request.key = stream;
        request.start = protocol::read_start{protocol::read_start::kind::position, at};
        request.max_bytes = 1 << 20;
        request.cold_as_files = true;
        return test::run_to_end(_io, _engine.read(request));
    }
    // The streamed bytes of `view`, then its hot ones; an error from the stream.
    result<std::string> drain(const stream_view& view) {
        std::string out;
        for (;;) {
            auto batch = test::run_to_end(_io, view.streamed->next());
            if (!batch) return batch.err();
            if (batch->empty()) break;
            for (const auto& slice : *batch) out.append(slice.view());
        }
        EXPECT_EQ(out.size(), view.streamed->size());
        for (const auto& slice : view.data) out.append(slice.view());
        return out;
    }
    result<std::string> read_all() {
        std::string out;
        for (std::uint64_t at = 0;;) {
            read_request request;
            request.key = stream;
            request.start = protocol::read_start{protocol::read_start::kind::position, at};
            request.max_bytes = 1 << 20;
            const stream_view view = test::run_to_end(_io, _engine.read(request));
            if (view.refusal) {
                EXPECT_TRUE(view.data.empty() && view.files.empty()) << "no partial body";
                return *view.refusal;
            }
            for (const auto& slice : view.data) out.append(slice.view());
            if (view.next == view.tail) return out;
            at = view.next;
        }
    }
    template <typename Predicate>
    bool settle_until(Predicate done, std::chrono::seconds limit = 20s) {
        const auto until = std::chrono::steady_clock::now() + limit;
        while (!done()) {
            if (std::chrono::steady_clock::now() > until) return false;
            _io.run_for(5ms);
        }
        return true;
    }
    void run_for(std::chrono::milliseconds d) { _io.run_for(d); }
    std::size_t chunks() const { return store.count_under(std::string(chunk_key_prefix)); }

    // Until the first chunk is in the store and its flush applied: the
    // stream has cold bytes that memory no longer holds (the hot tail lets go
    // of whole blocks only, and the first block is one chunk's size).
    void write_first_chunk() {
        const metrics::gauge& hot = service_metrics::get().hot_bytes;
        const std::int64_t before = hot.value();
        ASSERT_FALSE(append(std::string(chunk_bytes, 'c')).refusal);
        ASSERT_FALSE(append(std::string(100, 'd')).refusal);
        ASSERT_TRUE(settle_until([&] { return chunks() > 0 && hot.value() <= before + 100; }));
    }
    // Appends of 100 bytes while the store is down until one is refused.
    state::apply_result append_until_refused() {
        for (int i = 0; i < 1000; ++i) {
            state::apply_result r = append(std::string(100, static_cast<char>('a' + i % 26)));
            if (r.refusal) return r;
            _io.run_for(1ms);  // the flushes that fail meanwhile
        }
        ADD_FAILURE() << "no append was refused";
        return {};
    }

    test::memory_object_store store;
    std::string model;

private:
    cold_tier cold() {
        cold_tier c;
        c.store = &store;
        c.cache = &_cache;
        c.io = _pool.get_executor();
        c.streamed_reads = &_reads;
        c.chunk_bytes = chunk_bytes;
        c.group_hot_budget = hot_budget;
        c.flush_retry_base = 5ms;
        c.flush_retry_cap = 40ms;
        c.slow_flush = 20ms;
        return c;
    }

    asio::io_context _io;
    asio::executor_work_guard<asio::io_context::executor_type> _guard{_io.get_executor()};
    asio::thread_pool _pool{2};
    storage::chunk_cache _cache{0};  // every cold read goes to the store
    cold_read_pool _reads{2};
    engine _engine;
};

// What the edge answers with: the status and Retry-After of the refusal.
edge::response edge_refusal(const error& e) {
    asio::io_context io;
    edge::connection_stream connection{edge::connection_executor(io)};
    edge::request req{boost::beast::http::verb::post, stream, 11};
    edge::edge_options options;
    edge::answer_summary summary;
    const edge::exchange ex(connection, req, edge::route{}, edge::query_params{}, nullptr,
                            options, summary);
    return ex.make_error(e);
}

TEST_F(ColdOutage, WritesGoOnIntoMemoryWhileTheStoreIsDownAndUnderBudget) {
    write_first_chunk();
    store.set_down(true);
    for (int i = 0; i < 40; ++i) {
        ASSERT_FALSE(append(std::string(100, 'w')).refusal) << "append " << i;
        run_for(1ms);
    }
    EXPECT_GT(store.failed_calls(), 0u) << "flushes were tried";
    store.set_down(false);
    EXPECT_EQ(*read_all(), model);
}

TEST_F(ColdOutage, PastTheBudgetWritesAreRefused503WithRetryAfter) {
    write_first_chunk();
    store.set_down(true);
    const std::size_t before = model.size();
    const state::apply_result refused = append_until_refused();
    ASSERT_TRUE(refused.refusal);
    EXPECT_EQ(refused.refusal->code, error_code::cold_backpressure);
    EXPECT_TRUE(protocol::proves_refusal(refused.refusal->code));
    const edge::response answer = edge_refusal(*refused.refusal);
    EXPECT_EQ(answer.result_int(), 503u);
    EXPECT_EQ(answer[boost::beast::http::field::retry_after], "1");
    EXPECT_NE(answer.body().find("COLD_BACKPRESSURE"), std::string::npos);
    EXPECT_LE(model.size() - before, hot_budget) << "the budget held";
}

// An outage before any flush has failed (the store's calls still retrying),
// or a store slower than the writers: flushes are in flight, nothing leaves
// memory, and once one is slow the group refuses at twice its budget instead
// of growing.
TEST_F(ColdOutage, AStoreThatTakesNothingYetBoundsTheGroupAtTwiceItsBudget) {
    write_first_chunk();
    store.set_stalled(true);
    const std::size_t before = model.size();
    const state::apply_result refused = append_until_refused();
    ASSERT_TRUE(refused.refusal);
    EXPECT_EQ(refused.refusal->code, error_code::cold_backpressure);
    EXPECT_EQ(store.failed_calls(), 0u) << "no flush failed: they were all still in flight";
    EXPECT_GT(model.size() - before, hot_budget) << "past the budget while flushes ran";
    EXPECT_LE(model.size() - before, 2 * hot_budget) << "twice the budget held";
    store.set_stalled(false);
    state::apply_result accepted;
    ASSERT_TRUE(settle_until([&] {
        accepted = append(std::string(100, 'z'));
        return !accepted.refusal;
    })) << "writes are taken again once the flushes are done";
    EXPECT_EQ(*read_all(), model);
}

TEST_F(ColdOutage, FlushingResumesByItselfAndTheBytesReadBackIdentical) {
    write_first_chunk();
    store.set_down(true);
    ASSERT_TRUE(append_until_refused().refusal);
    const std::size_t chunks_before = chunks();
    store.set_down(false);
    // No append starts it: the group's own retry does.
    ASSERT_TRUE(settle_until([&] { return chunks() > chunks_before; }));
    state::apply_result accepted;
    ASSERT_TRUE(settle_until([&] {
        accepted = append(std::string(100, 'z'));
        return !accepted.refusal;
    })) << "writes are taken again once the flushes drained the memory";
    const auto read = read_all();
    ASSERT_TRUE(read);
    EXPECT_EQ(*read, model);
}

TEST_F(ColdOutage, AColdReadDuringTheOutageIs503AndNeverPartial) {
    write_first_chunk();
    store.set_down(true);
    const auto read = read_all();
    ASSERT_FALSE(read);
    EXPECT_EQ(read.err().code, error_code::cold_backpressure);
    EXPECT_EQ(edge_refusal(read.err()).result_int(), 503u);
    store.set_down(false);
    EXPECT_EQ(*read_all(), model);
}

TEST_F(ColdOutage, ACatchUpReadOnAStoreThatStreamsSendsTheColdBytesWithoutLoadingAChunk) {
    store.stream_in_pieces(100);
    write_first_chunk();
    const stream_view view = catch_up(0);
    ASSERT_FALSE(view.refusal);
    ASSERT_TRUE(view.streamed);
    EXPECT_TRUE(view.files.empty());
    EXPECT_GE(view.streamed->size(), chunk_bytes);
    const auto read = drain(view);
    ASSERT_TRUE(read);
    EXPECT_EQ(*read, model.substr(0, view.next));
    EXPECT_EQ(store.gets(), 0u) << "no chunk loaded whole";
    // A read that needs the bytes in memory (a long-poll's) still loads them.
    EXPECT_EQ(*read_all(), model);
    EXPECT_GT(store.gets(), 0u);
}

TEST_F(ColdOutage, AStreamedReadWhoseStoreGivesNoFirstByteIsThe503Refusal) {
    store.stream_in_pieces(100);
    write_first_chunk();
    const stream_view view = catch_up(0);
    ASSERT_TRUE(view.streamed);
    store.set_down(true);  // nothing is asked of the store before the first next()
    const auto read = drain(view);
    ASSERT_FALSE(read);
    EXPECT_EQ(read.err().code, error_code::cold_backpressure);
    EXPECT_EQ(edge_refusal(read.err()).result_int(), 503u);
    store.set_down(false);
    const auto again = drain(catch_up(0));
    ASSERT_TRUE(again);
    EXPECT_EQ(*again, model.substr(0, again->size()));
}

}  // namespace
}  // namespace dstream::service
