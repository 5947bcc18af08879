// The write-ahead log: record format, recovery of a torn tail, refusal of
// corruption in the middle, and deletion of segments checkpoints cover.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <map>
#include <mutex>
#include <sched.h>
#include <thread>
#include <unistd.h>

#include <gtest/gtest.h>

#include "log/node_wal.h"
#include "log/wal_format.h"
#include "page_cache.h"

namespace dstream::log {
namespace {

namespace fs = std::filesystem;

struct temp_dir {
    fs::path path = fs::temp_directory_path() / ("dstream-wal-test-" + std::to_string(::getpid()) +
                                                 "-" + std::to_string(counter++));
    temp_dir() {
        fs::remove_all(path);
        fs::create_directories(path);
    }
    ~temp_dir() { fs::remove_all(path); }
    static inline std::atomic<int> counter{0};
};

// Collects durable notifications from the WAL threads.
class recording_sink : public wal_sink {
public:
    void on_written(std::uint64_t index, const status& st) override {
        std::lock_guard lock(_mutex);
        _last = index;
        _ok = _ok && st.ok();
        _changed.notify_all();
    }
    bool wait_for(std::uint64_t index) { return wait_for_within(index, std::chrono::seconds(5)); }
    bool wait_for_within(std::uint64_t index, std::chrono::milliseconds within) {
        std::unique_lock lock(_mutex);
        return _changed.wait_for(lock, within, [&] { return _last >= index; }) && _ok;
    }

private:
    std::mutex _mutex;
    std::condition_variable _changed;
    std::uint64_t _last = 0;
    bool _ok = true;
};

struct seen_record {
    std::uint32_t group;
    std::uint64_t index;
    std::string payload;
};

std::vector<seen_record> recover_all(node_wal& wal, wal_recovery* info = nullptr) {
    std::vector<seen_record> seen;
    auto r =
        wal.recover([&](std::uint32_t g, std::uint64_t i, std::string_view p, log::wal_payloads) {
            seen.push_back({g, i, std::string(p)});
        });
    if (info) *info = r;
    return seen;
}

void write_records(const fs::path& dir, std::uint32_t group, int count,
                   std::uint64_t segment_bytes = 32u << 20) {
    node_wal wal({dir, segment_bytes});
    recover_all(wal);
    wal.start();
    recording_sink sink;
    for (int i = 1; i <= count; ++i) {
        wal.submit(group, static_cast<std::uint64_t>(i),
                   "payload-" + std::to_string(i) + std::string(100, 'x'), &sink,
                   static_cast<std::uint64_t>(i));
    }
    ASSERT_TRUE(sink.wait_for(static_cast<std::uint64_t>(count)));
    wal.stop();
}

fs::path only_segment(const fs::path& dir) {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(dir)) files.push_back(e.path());
    EXPECT_EQ(files.size(), 1u);
    return files.front();
}

void write_file(const fs::path& path, std::string_view bytes) {
    std::ofstream(path, std::ios::binary) << bytes;
}

TEST(WalFormat, RecordRoundTripsAndDetectsDamage) {
    std::string bytes;
    append_wal_record(bytes, 7, 42, "hello");
    wal_record r;
    std::size_t used = 0;
    ASSERT_EQ(decode_wal_record(bytes, r, used), wal_decode_status::ok);
    EXPECT_EQ(r.group, 7u);
    EXPECT_EQ(r.index, 42u);
    EXPECT_EQ(r.payload, "hello");
    EXPECT_EQ(used, bytes.size());

    EXPECT_EQ(decode_wal_record(std::string_view(bytes).substr(0, bytes.size() - 1), r, used),
              wal_decode_status::truncated);
    std::string flipped = bytes;
    flipped.back() ^= 1;
    EXPECT_EQ(decode_wal_record(flipped, r, used), wal_decode_status::corrupt);
    std::string huge = bytes;
    huge[3] = '\x7f';  // a length far beyond the limit
    EXPECT_EQ(decode_wal_record(huge, r, used), wal_decode_status::corrupt);
}

// With several flushes in flight, each sink still hears of its records in
// order, each exactly once, and everything answered is in the log, across
// segment switches (which wait for the open segment's flushes).
TEST(NodeWal, ConcurrentFlushesAnswerEachSinkInOrder) {
    temp_dir dir;
    class ordered_sink : public wal_sink {
    public:
        void on_written(std::uint64_t index, const status& st) override {
            std::lock_guard lock(mutex);
            in_order = in_order && st.ok() && index > last;
            last = index;
            changed.notify_all();
        }
        std::mutex mutex;
        std::condition_variable changed;
        std::uint64_t last = 0;
        bool in_order = true;
    };
    constexpr int groups = 6;
    constexpr int per_group = 400;
    std::vector<ordered_sink> sinks(groups);
    {
        node_wal wal({dir.path, 64 * 1024, 4});
        recover_all(wal);
        wal.start();
        std::vector<std::thread> writers;
        for (int g = 0; g < groups; ++g) {
            writers.emplace_back([&, g] {
                for (int i = 1; i <= per_group; ++i) {
                    wal.submit(static_cast<std::uint32_t>(g), static_cast<std::uint64_t>(i),
                               std::string(static_cast<std::size_t>(50 + (i * 37) % 700),
                                           static_cast<char>('a' + g)),
                               &sinks[static_cast<std::size_t>(g)], static_cast<std::uint64_t>(i));
                    if (i % 50 == 0) {
                        // Keep some records answered before more are queued: many batches.
                        auto& sink = sinks[static_cast<std::size_t>(g)];
                        std::unique_lock lock(sink.mutex);
                        sink.changed.wait_for(lock, std::chrono::seconds(20), [&] {
                            return sink.last + 25 >= static_cast<std::uint64_t>(i);
                        });
                    }
                }
            });
        }
        for (auto& t : writers) t.join();
        for (auto& sink : sinks) {
            std::unique_lock lock(sink.mutex);
            ASSERT_TRUE(sink.changed.wait_for(lock, std::chrono::seconds(20),
                                              [&] { return sink.last == per_group; }));
            EXPECT_TRUE(sink.in_order);
        }
        wal.stop();
    }
    node_wal again({dir.path});
    wal_recovery info;
    const auto seen = recover_all(again, &info);
    EXPECT_EQ(seen.size(), static_cast<std::size_t>(groups * per_group));
    EXPECT_GT(info.segments, 1u);
    std::vector<std::uint64_t> next(groups, 1);
    for (const auto& r : seen) {
        ASSERT_LT(r.group, static_cast<std::uint32_t>(groups));
        EXPECT_EQ(r.index, next[r.group]++);
    }
}

// A burst submitted quietly waits for its submitter's wake, then goes out
// whole, in one batch behind the records before it.
TEST(NodeWal, AQuietBurstWaitsForItsWakeAndGoesInOneBatch) {
    temp_dir dir;
    node_wal wal({dir.path, 32u << 20});
    recover_all(wal);
    wal.start();
    recording_sink sink;
    // Every WAL thread asleep first (one awake takes what it finds queued).
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    for (std::uint64_t i = 1; i <= 20; ++i) {
        wal.submit_quietly(3, i, "burst-" + std::to_string(i), &sink, i);
    }
    // Not woken: nothing is written.
    EXPECT_FALSE(sink.wait_for_within(1, std::chrono::milliseconds(100)));
    wal.wake();
    ASSERT_TRUE(sink.wait_for(20));
    // A plain submit after it still wakes a thread by itself.
    wal.submit(3, 21, "alone", &sink, 21);
    ASSERT_TRUE(sink.wait_for(21));
    wal.stop();
    node_wal again({dir.path, 32u << 20});
    const auto seen = recover_all(again);
    ASSERT_EQ(seen.size(), 21u);
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].index, i + 1);
}

TEST(NodeWal, RecoversEveryDurableRecordInOrder) {
    temp_dir dir;
    write_records(dir.path, 3, 50);
    node_wal wal({dir.path});
    const auto seen = recover_all(wal);
    ASSERT_EQ(seen.size(), 50u);
    for (std::size_t i = 0; i < seen.size(); ++i) {
        EXPECT_EQ(seen[i].group, 3u);
        EXPECT_EQ(seen[i].index, i + 1);
        EXPECT_TRUE(seen[i].payload.starts_with("payload-" + std::to_string(i + 1)));
    }
}

// A payload submitted as bytes of its own and bytes it shares (a Raft
// entry's, written from the log's memory) is one payload on disk, its
// checksum over both; the shared bytes are not copied, and stay the
// submitter's to keep alive only through the shared owner.
TEST(NodeWal, APayloadInTwoPartsIsOneRecordOnDisk) {
    temp_dir dir;
    std::string expected;
    {
        node_wal wal({dir.path});
        recover_all(wal);
        wal.start();
        recording_sink sink;
        auto shared = byte_slice::owning(std::string(200000, 'e'));
        expected = "head:" + std::string(shared.view());
        wal.submit(1, 1, wal_payload("head:", shared), &sink, 1);
        wal.submit(1, 2, wal_payload("only its own", byte_slice{}), &sink, 2);
        shared = {};  // the queue holds what it needs
        ASSERT_TRUE(sink.wait_for(2));
        wal.stop();
    }
    node_wal wal({dir.path});
    const auto seen = recover_all(wal);
    ASSERT_EQ(seen.size(), 2u);
    EXPECT_EQ(seen[0].payload, expected);
    EXPECT_EQ(seen[1].payload, "only its own");
}

TEST(NodeWal, CutsATornTailAndKeepsEverythingBeforeIt) {
    temp_dir dir;
    write_records(dir.path, 1, 10);
    const fs::path segment = only_segment(dir.path);
    const auto full = fs::file_size(segment);
    // A crash in the middle of the last record's write.
    fs::resize_file(segment, full - 37);
    {
        node_wal wal({dir.path});
        wal_recovery info;
        const auto seen = recover_all(wal, &info);
        EXPECT_TRUE(info.torn_tail_cut);
        ASSERT_EQ(seen.size(), 9u);
        EXPECT_EQ(seen.back().index, 9u);
    }
    // The cut is persistent, and appending after it works.
    node_wal wal({dir.path});
    wal_recovery info;
    EXPECT_EQ(recover_all(wal, &info).size(), 9u);
    EXPECT_FALSE(info.torn_tail_cut);
}

// Records written after the damaged one was durable (here by a later run)
// carry a watermark beyond it: the damage is corruption, not a torn write.
TEST(NodeWal, RefusesToStartOnDamageFollowedByValidRecords) {
    temp_dir dir;
    write_records(dir.path, 1, 10);
    write_records(dir.path, 2, 10);
    const fs::path segment = only_segment(dir.path);
    const std::size_t first_record =
        wal_magic.size() + wal_record_header_bytes;  // after a watermark
    {
        std::fstream f(segment, std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(first_record + wal_record_header_bytes + 3));
        f.put('#');  // inside the first record's payload
    }
    node_wal wal({dir.path});
    try {
        recover_all(wal);
        FAIL() << "corruption in the middle of the log must stop the start";
    } catch (const wal_corruption& e) {
        const std::string what = e.what();
        EXPECT_NE(what.find(segment.filename().string()), std::string::npos) << what;
        EXPECT_NE(what.find("offset " + std::to_string(first_record)), std::string::npos) << what;
    }
}

// Each segment after the first comes prepared (zeros past the magic) once
// the preparing thread had time: records land inside it, never past its
// size, and recover in order across restarts.
TEST(NodeWal, PreparedSegmentsHoldTheRecordsWithinTheirSize) {
    temp_dir dir;
    constexpr std::uint64_t segment_bytes = 4096;
    wal_options options{dir.path, segment_bytes};
    options.preallocate = true;
    const auto sizes = [&] {
        std::vector<std::uintmax_t> out;
        for (const auto& e : fs::directory_iterator(dir.path)) {
            if (e.path().extension() == ".wal") out.push_back(fs::file_size(e.path()));
        }
        return out;
    };
    std::uint64_t index = 0;
    for (int run = 0; run < 2; ++run) {
        node_wal wal(options);
        EXPECT_EQ(recover_all(wal).size(), index);
        wal.start();
        recording_sink sink;
        for (int i = 0; i < 120; ++i) {
            ++index;
            wal.submit(5, index, "payload-" + std::string(100, 'x'), &sink, index);
            ASSERT_TRUE(sink.wait_for(index));
        }
        wal.stop();
    }
    const auto all = sizes();
    ASSERT_GT(all.size(), 4u);
    EXPECT_GE(std::count(all.begin(), all.end(), segment_bytes), 3)
        << "segments after the first are prepared to their full size";
    for (const auto size : all) EXPECT_LE(size, segment_bytes);
    node_wal wal(options);
    wal_recovery info;
    const auto seen = recover_all(wal, &info);
    EXPECT_FALSE(info.torn_tail_cut) << "the zeros of a prepared segment are not damage";
    ASSERT_EQ(seen.size(), index);
    for (std::size_t i = 0; i < seen.size(); ++i) EXPECT_EQ(seen[i].index, i + 1);
}

// A segment the log has switched away from is read again only by a restart:
// its pages leave the page cache, by the preparing thread where there is one
// (off the switch, which holds appends back) and at the switch otherwise.
TEST(NodeWal, ClosedSegmentsLeaveThePageCache) {
    for (const bool preallocate : {true, false}) {
        SCOPED_TRACE(preallocate ? "prepared segments" : "segments made at the switch");
        temp_dir dir;
        if (!test::shows_dropped_pages(dir.path)) GTEST_SKIP() << "no page cache to see here";
        constexpr std::uint64_t segment_bytes = 64 * 1024;
        wal_options options{dir.path, segment_bytes};
        options.preallocate = preallocate;
        node_wal wal(options);
        recover_all(wal);
        wal.start();
        recording_sink sink;
        for (std::uint64_t index = 1; index <= 24; ++index) {
            wal.submit(5, index, std::string(16 * 1024, 'x'), &sink, index);
            ASSERT_TRUE(sink.wait_for(index));
        }
        const auto segments = [&] {
            std::vector<fs::path> out;
            for (const auto& e : fs::directory_iterator(dir.path)) {
                if (e.path().extension() == ".wal") out.push_back(e.path());
            }
            std::sort(out.begin(), out.end());
            return out;
        };
        const std::vector<fs::path> written = segments();
        ASSERT_GE(written.size(), 4u);
        EXPECT_GT(test::cached_pages(written.back()), 0u) << "the open segment stays cached";
        const auto closed_cached = [&] {
            std::size_t pages = 0;
            for (std::size_t i = 0; i + 1 < written.size(); ++i)
                pages += test::cached_pages(written[i]);
            return pages;
        };
        for (int i = 0; i < 500 && closed_cached() > 0; ++i) {
            std::this_thread::sleep_for(std::chrono::milliseconds(10));
        }
        EXPECT_EQ(closed_cached(), 0u) << "pages of closed segments left cached";
        wal.stop();
        node_wal reread(options);
        EXPECT_EQ(recover_all(reread).size(), 24u) << "every record is still on disk";
    }
}

// The flushing threads and the preparing one are batch work under names an
// operator can find (base/background_thread.h): on a CPU an I/O thread shares,
// a finished flush then waits for the I/O thread instead of preempting it.
TEST(NodeWal, ItsThreadsAreNamedBatchWork) {
    temp_dir dir;
    wal_options options{dir.path};
    options.sync_threads = 3;
    options.preallocate = true;
    node_wal wal(options);
    recover_all(wal);
    wal.start();
    std::map<std::string, int> batch_threads;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (std::chrono::steady_clock::now() < deadline) {
        batch_threads.clear();
        for (const auto& task : fs::directory_iterator("/proc/self/task")) {
            std::ifstream comm(task.path() / "comm");
            std::string name;
            std::getline(comm, name);
            const pid_t tid = std::stoi(task.path().filename().string());
            if (sched_getscheduler(tid) == SCHED_BATCH) ++batch_threads[name];
        }
        if (batch_threads["dstream-wal"] == 3 && batch_threads["dstream-wal-seg"] == 1) break;
        std::this_thread::sleep_for(std::chrono::milliseconds(10));
    }
    EXPECT_EQ(batch_threads["dstream-wal"], 3);
    EXPECT_EQ(batch_threads["dstream-wal-seg"], 1);
    wal.stop();
}

// A restart appends after the last record, inside the zeros, not after them.
TEST(NodeWal, ZerosAfterTheLastRecordAreRoomNotDamage) {
    temp_dir dir;
    write_records(dir.path, 1, 10);
    const fs::path segment = only_segment(dir.path);
    const auto records_end = fs::file_size(segment);
    fs::resize_file(segment, 64 * 1024);
    {
        node_wal wal({dir.path});
        wal_recovery info;
        EXPECT_EQ(recover_all(wal, &info).size(), 10u);
        EXPECT_FALSE(info.torn_tail_cut);
        wal.start();
        recording_sink sink;
        wal.submit(1, 11, "payload-11", &sink, 11);
        ASSERT_TRUE(sink.wait_for(11));
        wal.stop();
    }
    EXPECT_EQ(fs::file_size(segment), 64u * 1024);
    std::ifstream in(segment, std::ios::binary);
    in.seekg(static_cast<std::streamoff>(records_end));
    std::string next(wal_record_header_bytes, '\0');
    in.read(next.data(), static_cast<std::streamsize>(next.size()));
    EXPECT_NE(next, std::string(next.size(), '\0')) << "record 11's batch follows record 10";
    node_wal wal({dir.path});
    const auto seen = recover_all(wal);
    ASSERT_EQ(seen.size(), 11u);
    EXPECT_EQ(seen.back().payload, "payload-11");
}

TEST(NodeWal, CutsATornTailFollowedByZeros) {
    temp_dir dir;
    write_records(dir.path, 1, 10);
    const fs::path segment = only_segment(dir.path);
    fs::resize_file(segment, fs::file_size(segment) - 37);
    fs::resize_file(segment, 64 * 1024);
    node_wal wal({dir.path});
    wal_recovery info;
    EXPECT_EQ(recover_all(wal, &info).size(), 9u);
    EXPECT_TRUE(info.torn_tail_cut);
}

// A closed segment was flushed whole before the next began: zeros where its
// last records were are lost records, found by the next segment's name.
TEST(NodeWal, RefusesToStartWhenAClosedSegmentLostItsLastRecords) {
    temp_dir dir;
    // One batch per call, each past the room left: a segment per call.
    for (std::uint32_t group = 1; group <= 4; ++group) write_records(dir.path, group, 6, 1024);
    std::vector<fs::path> segments;
    for (const auto& e : fs::directory_iterator(dir.path)) segments.push_back(e.path());
    std::sort(segments.begin(), segments.end());
    ASSERT_GT(segments.size(), 2u);
    const auto size = fs::file_size(segments.front());
    const std::size_t last_record = wal_record_header_bytes + std::string("payload-6").size() + 100;
    {
        std::fstream f(segments.front(), std::ios::in | std::ios::out | std::ios::binary);
        f.seekp(static_cast<std::streamoff>(size - last_record));
        f << std::string(last_record, '\0');
    }
    node_wal wal({dir.path, 1024});
    try {
        recover_all(wal);
        FAIL() << "records missing from a closed segment must stop the start";
    } catch (const wal_corruption& e) {
        EXPECT_NE(std::string(e.what()).find(segments[1].filename().string()), std::string::npos)
            << e.what();
    }
}

// A switch that fails removes the segment it began; a crash can undo the
// removal. That segment holds no record and a name the log has passed.
TEST(NodeWal, AnEmptySegmentAFailedSwitchLeftIsRemoved) {
    for (const bool last : {false, true}) {
        SCOPED_TRACE(last ? "the newest segment" : "between two others");
        temp_dir dir;
        for (std::uint32_t group = 1; group <= 2; ++group) write_records(dir.path, group, 6, 1024);
        std::vector<fs::path> segments;
        for (const auto& e : fs::directory_iterator(dir.path)) segments.push_back(e.path());
        std::sort(segments.begin(), segments.end());
        ASSERT_EQ(segments.size(), 2u);
        if (last) fs::remove(segments[1]);
        std::size_t records = 0;
        {
            node_wal before({dir.path, 1024});
            records = recover_all(before).size();
        }
        // Batches vary: the name only needs to sort after the first segment
        // and be one the log has passed.
        const fs::path leftover = dir.path / "00000000000000000004.wal";
        write_file(leftover, wal_magic);
        node_wal wal({dir.path, 1024});
        EXPECT_EQ(recover_all(wal).size(), records);
        EXPECT_FALSE(fs::exists(leftover));
        wal.start();
        recording_sink sink;
        wal.submit(3, 1, "after", &sink, 1);
        ASSERT_TRUE(sink.wait_for(1));
        wal.stop();
        node_wal again({dir.path, 1024});
        EXPECT_EQ(recover_all(again).size(), records + 1);
    }
}

TEST(NodeWal, APreparedSegmentLeftByAnEarlierRunIsRemovedAtStart) {
    temp_dir dir;
    write_records(dir.path, 1, 3);
    std::ofstream(dir.path / "next-segment.prepared") << "half a prepared segment";
    node_wal wal({dir.path});
    EXPECT_EQ(recover_all(wal).size(), 3u);
    wal.start();
    EXPECT_FALSE(fs::exists(dir.path / "next-segment.prepared"));
}

TEST(NodeWal, RefusesToStartBeforeRecovery) {
    temp_dir dir;
    write_records(dir.path, 1, 3);
    node_wal wal({dir.path});
    EXPECT_THROW(wal.start(), std::logic_error);
}

// Three batches of one record each, the second lost (zeros) in a crash; the
// third's watermark says how far the log was durable when it was written.
struct segment_with_a_hole {
    std::string bytes;
    std::size_t second = 0;  // where the lost batch begins
};
segment_with_a_hole hole_in_the_middle(std::string_view magic, bool third_after_second_flushed) {
    segment_with_a_hole s;
    s.bytes = std::string(magic);
    append_wal_record(s.bytes, wal_watermark_group, s.bytes.size(), {});
    append_wal_record(s.bytes, 1, 1, "first");
    s.second = s.bytes.size();
    append_wal_record(s.bytes, wal_watermark_group, s.second, {});
    append_wal_record(s.bytes, 1, 2, "second");
    const std::size_t third = s.bytes.size();
    append_wal_record(s.bytes, wal_watermark_group, third_after_second_flushed ? third : s.second,
                      {});
    append_wal_record(s.bytes, 1, 3, "third");
    std::fill(s.bytes.begin() + static_cast<std::ptrdiff_t>(s.second),
              s.bytes.begin() + static_cast<std::ptrdiff_t>(third), '\0');
    return s;
}

// Flushes overlap, and the disk may write a later batch before an earlier
// one: batches that were never durable can follow a hole. Their watermark
// shows it, and recovery cuts them with the hole.
TEST(NodeWal, CutsUnflushedBatchesThatReachedTheDiskBeforeAnEarlierOne) {
    temp_dir dir;
    const auto s = hole_in_the_middle(wal_magic, false);
    const fs::path segment = dir.path / "00000000000000000001.wal";
    write_file(segment, s.bytes);
    node_wal wal({dir.path});
    wal_recovery info;
    const auto seen = recover_all(wal, &info);
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_EQ(seen[0].payload, "first");
    EXPECT_TRUE(info.torn_tail_cut);
    EXPECT_EQ(fs::file_size(segment), s.second);
}

void expect_hole_refused(std::string_view magic, bool third_after_second_flushed) {
    temp_dir dir;
    write_file(dir.path / "00000000000000000001.wal",
               hole_in_the_middle(magic, third_after_second_flushed).bytes);
    node_wal wal({dir.path});
    EXPECT_THROW(recover_all(wal), wal_corruption);
}

TEST(NodeWal, RefusesAHoleThatALaterWatermarkCoversAsDurable) {
    expect_hole_refused(wal_magic, true);
}

// A segment of the first format promises no watermarks: any valid record
// after damage makes it corruption, as it always did.
TEST(NodeWal, RefusesAHoleInASegmentWithoutWatermarks) {
    expect_hole_refused(wal_magic_without_watermarks, false);
}

TEST(NodeWal, DeletesSegmentsOnceCheckpointsCoverThem) {
    temp_dir dir;
    // Tiny segments: every batch of records rolls to a new file.
    node_wal wal({dir.path, 1024});
    recover_all(wal);
    wal.start();
    recording_sink a;
    recording_sink b;
    for (std::uint64_t i = 1; i <= 40; ++i) {
        wal.submit(0, i, std::string(200, 'a'), &a, i);
        ASSERT_TRUE(a.wait_for(i));
        wal.submit(1, i, std::string(200, 'b'), &b, i);
        ASSERT_TRUE(b.wait_for(i));
    }
    const auto count = [&] {
        return std::distance(fs::directory_iterator(dir.path), fs::directory_iterator{});
    };
    const auto before = count();
    ASSERT_GT(before, 4);
    wal.release(0, 40);
    EXPECT_EQ(count(), before) << "group 1 still needs every segment";
    wal.release(1, 20);
    const auto after = count();
    EXPECT_LT(after, before);
    wal.stop();

    // What is left still recovers group 1 from index 20 on, in order.
    node_wal again({dir.path, 1024});
    std::uint64_t previous = 0;
    bool saw_21 = false;
    again.recover([&](std::uint32_t g, std::uint64_t i, std::string_view, log::wal_payloads) {
        if (g != 1) return;
        EXPECT_GT(i, previous);
        previous = i;
        saw_21 = saw_21 || i == 21;
    });
    EXPECT_TRUE(saw_21);
    EXPECT_EQ(previous, 40u);
}

}  // namespace
}  // namespace dstream::log
