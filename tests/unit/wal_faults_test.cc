// The WAL on a failing disk (tests/support/faulty_file_io.h): every record is
// either acknowledged and then survives a crash, or refused with
// WAL_DISK_PRESSURE and then absent after it; the log goes on once the fault
// clears, and a crash never leaves it unreadable.
#include <condition_variable>
#include <csignal>
#include <map>
#include <mutex>
#include <numeric>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include <gtest/gtest.h>

#include "faulty_file_io.h"
#include "log/node_wal.h"
#include "log/wal_format.h"
#include "temp_dir.h"

namespace dstream::log {
namespace {

namespace fs = std::filesystem;
using protocol::error_code;
using test::fault;
using test::faulty_file_io;
using test::file_op;

// Each index's outcome: nothing for durable, the code for refused.
class outcome_sink : public wal_sink {
public:
    void on_written(std::uint64_t index, const status& st) override {
        std::lock_guard lock(_mutex);
        for (std::uint64_t i = _last + 1; i <= index; ++i) {
            _outcomes[i] = st ? std::nullopt : std::optional<error_code>(st.err().code);
        }
        _last = std::max(_last, index);
        _changed.notify_all();
    }
    // The outcome of `index`, once it is known.
    std::optional<error_code> wait(std::uint64_t index) {
        std::unique_lock lock(_mutex);
        const bool known = _changed.wait_for(lock, std::chrono::seconds(10),
                                             [&] { return _outcomes.contains(index); });
        EXPECT_TRUE(known) << "no outcome for record " << index;
        return known ? _outcomes[index] : std::optional<error_code>(error_code::internal);
    }

private:
    std::mutex _mutex;
    std::condition_variable _changed;
    std::map<std::uint64_t, std::optional<error_code>> _outcomes;
    std::uint64_t _last = 0;
};

std::string payload(std::uint64_t index) {
    return "record-" + std::to_string(index) + std::string(100, 'x');
}

// The indices of group 0 a WAL recovers from `dir`, on healthy calls.
std::vector<std::uint64_t> recovered(const fs::path& dir, wal_recovery* info = nullptr) {
    node_wal wal({dir});
    std::vector<std::uint64_t> indices;
    const wal_recovery r = wal.recover([&](std::uint32_t, std::uint64_t i, std::string_view p, log::wal_payloads) {
        EXPECT_EQ(p, payload(i));
        indices.push_back(i);
    });
    if (info != nullptr) *info = r;
    return indices;
}

// Polls `done` for up to ten seconds.
template <typename Predicate>
bool eventually(Predicate done) {
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
    while (!done()) {
        if (std::chrono::steady_clock::now() > deadline) return false;
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
    }
    return true;
}

// Holds calls on WAL segments in the faulty calls' hook, in order of arrival
// per kind of call (flushes unless told otherwise), until the test lets them go.
class flush_gate {
public:
    explicit flush_gate(faulty_file_io& io) : _io(io) {
        _io.set_hook([this](file_op op, const std::string& path) {
            if (path.ends_with(".wal")) pass(op);
        });
    }
    ~flush_gate() {
        open();
        _io.set_hook({});
    }

    void hold(file_op op = file_op::sync) {
        std::lock_guard lock(_mutex);
        _lanes[op].holding = true;
    }
    // Whether `count` calls arrived at the gate (within ten seconds).
    bool wait_arrivals(int count, file_op op = file_op::sync) {
        std::unique_lock lock(_mutex);
        return _changed.wait_for(lock, std::chrono::seconds(10),
                                 [&] { return _lanes[op].arrived >= count; });
    }
    int arrivals(file_op op = file_op::sync) {
        std::lock_guard lock(_mutex);
        return _lanes[op].arrived;
    }
    // Lets the first `count` arrivals through.
    void release(int count, file_op op = file_op::sync) {
        std::lock_guard lock(_mutex);
        _lanes[op].released = count;
        _changed.notify_all();
    }
    // Lets every call through, now and later.
    void open() {
        std::lock_guard lock(_mutex);
        for (auto& [op, calls] : _lanes) calls.holding = false;
        _changed.notify_all();
    }

private:
    struct lane {
        bool holding = false;
        int arrived = 0;
        int released = 0;
    };

    void pass(file_op op) {
        std::unique_lock lock(_mutex);
        lane& l = _lanes[op];
        if (!l.holding) return;
        const int ticket = ++l.arrived;
        _changed.notify_all();
        _changed.wait(lock, [&] { return !l.holding || l.released >= ticket; });
    }

    faulty_file_io& _io;
    std::mutex _mutex;
    std::condition_variable _changed;
    std::map<file_op, lane> _lanes;
};

// A WAL in a fresh <dir>/wal on faulty calls, and a sink for group 0.
struct faulty_wal {
    void open(std::uint64_t segment_bytes = 32u << 20,
              std::chrono::microseconds flush_stagger = std::chrono::milliseconds(1),
              bool preallocate = false) {
        wal.emplace(wal_options{wal_dir(), segment_bytes, 4, flush_stagger, preallocate}, io);
        (void)wal->recover([](std::uint32_t, std::uint64_t, std::string_view, log::wal_payloads) {});
        wal->start();
    }
    // Waits until the next segment is prepared (a flushed file of `bytes`).
    bool wait_prepared(std::uint64_t bytes) {
        const fs::path prepared = wal_dir() / "next-segment.prepared";
        const bool whole = eventually([&] {
            std::error_code ec;
            return fs::file_size(prepared, ec) == bytes && !ec;
        });
        // Its flush, and the flag set right after it.
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        return whole;
    }
    // Submits `index` alone in its batch and waits for its outcome.
    std::optional<error_code> write(std::uint64_t index) {
        wal->submit(0, index, payload(index), &sink, index);
        return sink.wait(index);
    }
    // Stops the WAL, loses what was not durable, and recovers on healthy calls.
    std::vector<std::uint64_t> crash_and_recover(wal_recovery* info = nullptr) {
        wal.reset();
        io.crash();
        return recovered(wal_dir(), info);
    }
    fs::path wal_dir() const { return dir.path() / "wal"; }

    test::temp_dir dir{"dstream-wal-faults"};
    faulty_file_io io{dir.path()};
    outcome_sink sink;
    std::optional<node_wal> wal;
};

class WalFaults : public ::testing::Test, protected faulty_wal {
protected:
    // Record 1 is written; record 2 is submitted and its flush held at `gate`.
    void hold_flush_of_record_2(flush_gate& gate) {
        ASSERT_EQ(write(1), std::nullopt);
        gate.hold();
        wal->submit(0, 2, payload(2), &sink, 2);
        ASSERT_TRUE(gate.wait_arrivals(1));
    }
    // Records 2 and 3 are submitted and held at `gate`, 2's flush first in
    // line: that flush fails, `pause` passes, the gate opens. Both are
    // refused, and the log goes on with record 4.
    void fail_first_held_flush(flush_gate& gate, std::chrono::milliseconds pause) {
        io.inject(file_op::sync, ".wal", fault::fail(EIO));
        gate.release(1);
        ASSERT_TRUE(eventually([&] { return io.fired() == 1; }));
        std::this_thread::sleep_for(pause);
        gate.open();
        EXPECT_EQ(sink.wait(2), error_code::wal_disk_pressure);
        EXPECT_EQ(sink.wait(3), error_code::wal_disk_pressure);
        EXPECT_EQ(write(4), std::nullopt);
        EXPECT_EQ(crash_and_recover(), (std::vector<std::uint64_t>{1, 4}));
    }
};

// Record 1 is written and record 2 needs a new segment: `what` (on the
// directory for the "directory" case, else on the segment) refuses it, and
// the log goes on with records 3 and 4.
void refuse_record_2_at_the_switch(faulty_wal& w, const std::string& name,
                                   const std::pair<file_op, fault>& what) {
    w.io.inject(what.first, name == "directory" ? "/wal" : ".wal", what.second);
    EXPECT_EQ(w.write(2), error_code::wal_disk_pressure);
    EXPECT_EQ(w.io.fired(), 1);
    EXPECT_EQ(w.write(3), std::nullopt);
    EXPECT_EQ(w.write(4), std::nullopt);
    EXPECT_EQ(w.crash_and_recover(), (std::vector<std::uint64_t>{1, 3, 4}));
}

struct write_fault_case {
    const char* name;
    std::vector<fault> faults;  // on the next writes of the segment, in turn
    bool kept;                  // the record survives (a short write is no failure)
};

TEST_F(WalFaults, AFailedWriteIsRefusedCutOutAndTheLogGoesOn) {
    const std::vector<write_fault_case> cases = {
        {"EIO", {fault::fail(EIO)}, false},
        {"ENOSPC", {fault::fail(ENOSPC)}, false},
        {"torn write", {fault::torn_write(30, EIO)}, false},
        {"short write, then ENOSPC", {fault::short_write(7), fault::fail(ENOSPC)}, false},
        {"short writes", {fault::short_write(7), fault::short_write(50)}, true},
    };
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        faulty_wal w;
        w.open();
        ASSERT_EQ(w.write(1), std::nullopt);
        for (const fault& f : c.faults) w.io.inject(file_op::write, ".wal", f);
        const auto second = w.write(2);
        EXPECT_EQ(w.io.fired(), static_cast<int>(c.faults.size()));
        if (c.kept) {
            EXPECT_EQ(second, std::nullopt);
        } else {
            EXPECT_EQ(second, error_code::wal_disk_pressure);
        }
        w.io.clear();
        EXPECT_EQ(w.write(3), std::nullopt) << "the log goes on";
        wal_recovery info;
        const std::vector<std::uint64_t> expected =
            c.kept ? std::vector<std::uint64_t>{1, 2, 3} : std::vector<std::uint64_t>{1, 3};
        EXPECT_EQ(w.crash_and_recover(&info), expected);
        EXPECT_FALSE(info.torn_tail_cut) << "the failed write was cut out at once";
    }
}

TEST_F(WalFaults, AFailedFlushRefusesWhatItCoveredAndTheLogGoesOn) {
    open();
    ASSERT_EQ(write(1), std::nullopt);
    io.inject(file_op::sync, ".wal", fault::fail(EIO));
    EXPECT_EQ(write(2), error_code::wal_disk_pressure);
    EXPECT_EQ(io.fired(), 1);
    EXPECT_EQ(write(3), std::nullopt);
    EXPECT_EQ(write(4), std::nullopt);
    EXPECT_EQ(crash_and_recover(), (std::vector<std::uint64_t>{1, 3, 4}));
}

// Two flushes in flight, the first fails: the pages it could not write are
// lost, and the second must not pass for their flush (Linux reports the
// error once per open file).
TEST_F(WalFaults, AFlushBesideAFailedOneDoesNotAcknowledgeWhatItLost) {
    flush_gate gate(io);
    open();
    ASSERT_NO_FATAL_FAILURE(hold_flush_of_record_2(gate));
    wal->submit(0, 3, payload(3), &sink, 3);
    ASSERT_TRUE(gate.wait_arrivals(2));
    fail_first_held_flush(gate, std::chrono::milliseconds(0));
}

// A batch written while a flush fails (its thread holding the write mutex)
// lands after the lost pages: it is cut back and refused with them.
TEST_F(WalFaults, ABatchWrittenWhileAFlushFailsIsRefusedWithIt) {
    flush_gate gate(io);
    open();
    ASSERT_NO_FATAL_FAILURE(hold_flush_of_record_2(gate));
    gate.hold(file_op::write);
    wal->submit(0, 3, payload(3), &sink, 3);
    ASSERT_TRUE(gate.wait_arrivals(1, file_op::write));
    // The pause: most likely the failed flush's thread then waits to cut
    // the log back while record 3's write is held.
    fail_first_held_flush(gate, std::chrono::milliseconds(10));
}

// A batch that needs a new segment waits, holding the write mutex, for the
// flush in flight on the open one; if that flush fails, the batch cuts the
// log back itself and goes to the new segment.
TEST_F(WalFaults, ASegmentSwitchWaitsForTheFlushInFlight) {
    for (const bool fails : {false, true}) {
        SCOPED_TRACE(fails ? "the flush fails" : "the flush succeeds");
        faulty_wal w;
        flush_gate gate(w.io);
        // Batches of one 128-byte record and a 20-byte watermark: two fit, not three.
        w.open(340);
        ASSERT_EQ(w.write(1), std::nullopt);
        gate.hold();
        w.wal->submit(0, 2, payload(2), &w.sink, 2);
        ASSERT_TRUE(gate.wait_arrivals(1));
        w.wal->submit(0, 3, payload(3), &w.sink, 3);
        std::this_thread::sleep_for(std::chrono::milliseconds(20));
        const auto segments = [&] {
            return std::distance(fs::directory_iterator(w.wal_dir()), fs::directory_iterator());
        };
        EXPECT_EQ(segments(), 1) << "no switch while the open segment has a flush in flight";
        if (fails) w.io.inject(file_op::sync, ".wal", fault::fail(EIO));
        gate.open();
        EXPECT_EQ(w.sink.wait(2),
                  fails ? std::optional(error_code::wal_disk_pressure) : std::nullopt);
        EXPECT_EQ(w.sink.wait(3), std::nullopt);
        EXPECT_EQ(w.write(4), std::nullopt);
        EXPECT_EQ(segments(), 2);
        EXPECT_EQ(w.crash_and_recover(), fails ? (std::vector<std::uint64_t>{1, 3, 4})
                                               : (std::vector<std::uint64_t>{1, 2, 3, 4}));
    }
}

// On a fast disk one flush at a time covers more records: records queued
// behind a young flush wait for it, and its thread flushes them next.
TEST_F(WalFaults, RecordsBehindAYoungFlushWaitForItsThread) {
    flush_gate gate(io);
    open(32u << 20, std::chrono::seconds(30));
    ASSERT_NO_FATAL_FAILURE(hold_flush_of_record_2(gate));
    wal->submit(0, 3, payload(3), &sink, 3);
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(gate.arrivals(), 1) << "no second flush beside a young one";
    gate.release(1);
    ASSERT_TRUE(gate.wait_arrivals(2)) << "record 3 is flushed once record 2's flush ends";
    gate.open();
    const auto start = std::chrono::steady_clock::now();
    EXPECT_EQ(sink.wait(2), std::nullopt);
    EXPECT_EQ(sink.wait(3), std::nullopt);
    EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
    EXPECT_EQ(crash_and_recover(), (std::vector<std::uint64_t>{1, 2, 3}));
}

// On a slow disk flushes still overlap: once the flush in flight is older
// than the stagger, another starts for the records queued behind it.
TEST_F(WalFaults, OnASlowDiskAFlushOlderThanTheStaggerGetsAnotherBesideIt) {
    flush_gate gate(io);
    open(32u << 20, std::chrono::milliseconds(100));
    // Record 1's flush takes longer than the stagger: the disk is slow.
    gate.hold();
    wal->submit(0, 1, payload(1), &sink, 1);
    ASSERT_TRUE(gate.wait_arrivals(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(120));
    gate.release(1);
    ASSERT_EQ(sink.wait(1), std::nullopt);
    wal->submit(0, 2, payload(2), &sink, 2);
    ASSERT_TRUE(gate.wait_arrivals(2));
    const auto held = std::chrono::steady_clock::now();
    wal->submit(0, 3, payload(3), &sink, 3);
    ASSERT_TRUE(gate.wait_arrivals(3)) << "a second flush while the first is held";
    EXPECT_GE(std::chrono::steady_clock::now() - held, std::chrono::milliseconds(90));
    gate.open();
    EXPECT_EQ(sink.wait(2), std::nullopt);
    EXPECT_EQ(sink.wait(3), std::nullopt);
    EXPECT_EQ(crash_and_recover(), (std::vector<std::uint64_t>{1, 2, 3}));
}

// On a fast disk no WAL thread waits beside a flush for its turn (it would
// mostly find the flush over): records behind it wait for its thread, and
// only a record that comes once the flush has run past the stagger starts
// another beside it.
TEST_F(WalFaults, OnAFastDiskRecordsBehindAFlushWaitForItUntilItRunsPastTheStagger) {
    flush_gate gate(io);
    open(32u << 20, std::chrono::milliseconds(100));
    for (std::uint64_t i = 1; i <= 30; ++i) ASSERT_EQ(write(i), std::nullopt);
    gate.hold();
    wal->submit(0, 31, payload(31), &sink, 31);
    ASSERT_TRUE(gate.wait_arrivals(1));
    wal->submit(0, 32, payload(32), &sink, 32);
    std::this_thread::sleep_for(std::chrono::milliseconds(150));
    EXPECT_EQ(gate.arrivals(), 1) << "record 32 waits for the held flush's thread";
    wal->submit(0, 33, payload(33), &sink, 33);
    ASSERT_TRUE(gate.wait_arrivals(2)) << "a flush past the stagger gets another beside it";
    gate.open();
    for (std::uint64_t i = 31; i <= 33; ++i) EXPECT_EQ(sink.wait(i), std::nullopt);
    std::vector<std::uint64_t> all(33);
    std::iota(all.begin(), all.end(), 1);
    EXPECT_EQ(crash_and_recover(), all);
}

TEST_F(WalFaults, ATornTailLeftByAPowerCutIsCutOnReopen) {
    flush_gate gate(io);
    open();
    ASSERT_EQ(write(1), std::nullopt);
    ASSERT_EQ(write(2), std::nullopt);
    gate.hold();
    wal->submit(0, 3, payload(3), &sink, 3);
    ASSERT_TRUE(gate.wait_arrivals(1));
    // Record 3 is written, not flushed: the cut keeps its batch's watermark,
    // its header and 5 bytes.
    io.power_cut(".wal", 2 * wal_record_header_bytes + 5);
    gate.open();
    (void)sink.wait(3);  // an answer after the power cut reaches nobody
    wal_recovery info;
    EXPECT_EQ(crash_and_recover(&info), (std::vector<std::uint64_t>{1, 2}));
    EXPECT_TRUE(info.torn_tail_cut);

    open();
    EXPECT_EQ(write(3), std::nullopt) << "the log goes on after the cut";
    EXPECT_EQ(crash_and_recover(&info), (std::vector<std::uint64_t>{1, 2, 3}));
    EXPECT_FALSE(info.torn_tail_cut);
}

// A new segment that cannot be made whole (full disk, I/O error) refuses the
// batch that needed it; the writer stays on the segment it had and tries
// again with the next batch.
TEST_F(WalFaults, ASegmentThatCannotBeBegunRefusesItsBatchAndTheLogGoesOn) {
    const std::vector<std::pair<const char*, std::pair<file_op, fault>>> cases = {
        {"create", {file_op::open, fault::fail(ENOSPC)}},
        {"magic", {file_op::write, fault::torn_write(3, ENOSPC)}},
        {"magic flush", {file_op::sync, fault::fail(EIO)}},
        {"directory", {file_op::sync_dir, fault::fail(EIO)}},
    };
    for (const auto& [name, what] : cases) {
        SCOPED_TRACE(name);
        faulty_wal w;
        w.open(200);  // records of 100-odd bytes: each batch after the first needs a new segment
        ASSERT_EQ(w.write(1), std::nullopt);
        refuse_record_2_at_the_switch(w, name, what);
    }
}

// The switch renames the prepared segment into place; if the segment cannot
// be opened or its name made durable, the batch is refused and the next one
// begins a segment again.
TEST_F(WalFaults, APreparedSegmentThatCannotBeOpenedRefusesItsBatchAndTheLogGoesOn) {
    const std::vector<std::pair<const char*, std::pair<file_op, fault>>> cases = {
        {"open", {file_op::open, fault::fail(EIO)}},
        {"directory", {file_op::sync_dir, fault::fail(EIO)}},
    };
    for (const auto& [name, what] : cases) {
        SCOPED_TRACE(name);
        faulty_wal w;
        w.open(200, std::chrono::milliseconds(1), true);
        ASSERT_EQ(w.write(1), std::nullopt);
        ASSERT_TRUE(w.wait_prepared(200));
        refuse_record_2_at_the_switch(w, name, what);
    }
}

// A disk too full to prepare a segment only costs speed: switches make their
// segments as before.
TEST_F(WalFaults, ASegmentThatCannotBePreparedLeavesTheSwitchesToMakeTheirOwn) {
    io.inject(file_op::write, "next-segment.prepared", fault::fail(ENOSPC), -1);
    open(200, std::chrono::milliseconds(1), true);
    // The preparer runs on a thread of its own: the writes come after its
    // first attempt failed, so their switches are the ones left to it.
    ASSERT_TRUE(eventually([&] { return io.fired() > 0; }));
    for (std::uint64_t i = 1; i <= 5; ++i) ASSERT_EQ(write(i), std::nullopt);
    wal->stop();
    EXPECT_FALSE(fs::exists(wal_dir() / "next-segment.prepared")) << "a failed one is removed";
    for (const auto& e : fs::directory_iterator(wal_dir())) {
        EXPECT_LT(fs::file_size(e.path()), 200u) << e.path() << " grew as written";
    }
    EXPECT_EQ(crash_and_recover(), (std::vector<std::uint64_t>{1, 2, 3, 4, 5}));
}

// A power cut inside a prepared segment leaves zeros after the torn record,
// not the end of the file: the record is still cut, and the log goes on.
TEST_F(WalFaults, ATornTailInAPreparedSegmentIsCutOnReopen) {
    flush_gate gate(io);
    // Batches of one record: 148 bytes with the watermark; 7 fit in a segment.
    constexpr std::uint64_t segment_bytes = 1100;
    open(segment_bytes, std::chrono::milliseconds(1), true);
    ASSERT_TRUE(wait_prepared(segment_bytes));
    for (std::uint64_t i = 1; i <= 8; ++i) ASSERT_EQ(write(i), std::nullopt);
    const fs::path second = wal_dir() / "00000000000000000008.wal";
    ASSERT_EQ(fs::file_size(second), segment_bytes) << "record 8 began the prepared segment";
    gate.hold();
    wal->submit(0, 9, payload(9), &sink, 9);
    ASSERT_TRUE(gate.wait_arrivals(1));
    io.power_cut(".wal", 2 * wal_record_header_bytes + 5);
    gate.open();
    (void)sink.wait(9);
    wal_recovery info;
    const std::vector<std::uint64_t> durable{1, 2, 3, 4, 5, 6, 7, 8};
    EXPECT_EQ(crash_and_recover(&info), durable);
    EXPECT_TRUE(info.torn_tail_cut);

    open(segment_bytes, std::chrono::milliseconds(1), true);
    EXPECT_EQ(write(9), std::nullopt) << "the log goes on after the cut";
    EXPECT_EQ(write(10), std::nullopt);
    auto all = durable;
    all.insert(all.end(), {9, 10});
    EXPECT_EQ(crash_and_recover(&info), all);
    EXPECT_FALSE(info.torn_tail_cut);
}

// When even the cut of a failed write fails, the log could hold a torn batch
// before later ones: the process stops instead of acknowledging anything.
TEST_F(WalFaults, AWriteThatCannotBeCutBackStopsTheProcess) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            open();
            (void)write(1);
            io.inject(file_op::write, ".wal", fault::torn_write(10, EIO));
            io.inject(file_op::truncate, ".wal", fault::fail(EIO));
            (void)write(2);
        },
        ::testing::KilledBySignal(SIGABRT), "");
}

}  // namespace
}  // namespace dstream::log
