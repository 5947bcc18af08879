// Checkpoints, the local object store (chunks, snapshot bodies), durable
// directories and node.meta on a failing disk (tests/support/faulty_file_io.h):
// a write that fails is reported, leaves what was there before usable, and
// after a crash every file is whole or absent; once the fault clears the
// next write works.
#include <atomic>
#include <fstream>
#include <iterator>
#include <optional>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "base/durable_dirs.h"
#include "faulty_file_io.h"
#include "log/checkpoint_files.h"
#include "runtime/node_identity.h"
#include "state/group_state.h"
#include "storage/local_dir_object_store.h"
#include "temp_dir.h"

namespace dstream::test {
namespace {

namespace fs = std::filesystem;
using protocol::error_code;

struct fault_case {
    const char* name;
    file_op op;
    const char* path_part;
    fault f;
};

// Files left under `dir` whose name ends in ".tmp".
std::size_t temporary_files(const fs::path& dir) {
    std::size_t count = 0;
    for (const auto& e : fs::recursive_directory_iterator(dir)) {
        count += e.path().string().ends_with(".tmp") ? 1 : 0;
    }
    return count;
}

// The index of group 1's newest checkpoint, after checking that it loads.
std::uint64_t newest_loadable(const log::checkpoint_files& files) {
    const auto newest = files.newest();
    const auto it = newest.find(1);
    if (it == newest.end()) {
        ADD_FAILURE() << "no checkpoint of group 1";
        return 0;
    }
    std::uint32_t group = 0;
    std::uint64_t index = 0;
    const auto loaded = files.load(it->second);
    EXPECT_TRUE(loaded) << it->second.path;
    if (!loaded) return 0;
    const auto restored = state::group_state::restore_checkpoint(loaded->image, group, index);
    EXPECT_TRUE(restored) << it->second.path;
    EXPECT_EQ(index, it->second.index);
    return it->second.index;
}

TEST(CheckpointFaults, AFailedCheckpointLeavesThePreviousOneUsable) {
    const std::vector<fault_case> cases = {
        {"create", file_op::open, ".ckpt.tmp", fault::fail(ENOSPC)},
        {"write", file_op::write, ".ckpt.tmp", fault::fail(ENOSPC)},
        {"torn write", file_op::write, ".ckpt.tmp", fault::torn_write(5, EIO)},
        {"flush", file_op::sync, ".ckpt.tmp", fault::fail(EIO)},
        {"rename", file_op::rename, ".ckpt.tmp", fault::fail(EIO)},
        {"directory", file_op::sync_dir, "/checkpoints", fault::fail(EIO)},
    };
    const state::group_state state;
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        temp_dir dir{"dstream-ckpt-faults"};
        faulty_file_io io{dir.path()};
        log::checkpoint_files files(dir.path() / "checkpoints", io);
        ASSERT_TRUE(files.write(1, 10, {}, state.capture_checkpoint(1, 10)));

        io.inject(c.op, c.path_part, c.f);
        const status failed = files.write(1, 20, {}, state.capture_checkpoint(1, 20));
        ASSERT_FALSE(failed);
        EXPECT_EQ(failed.err().code, error_code::internal);
        EXPECT_EQ(io.fired(), 1);
        EXPECT_EQ(temporary_files(dir.path()), 0u);
        // A checkpoint renamed into place before the failed directory sync
        // is whole: taking it is as good as taking the previous one.
        EXPECT_EQ(newest_loadable(files), c.op == file_op::sync_dir ? 20u : 10u);

        ASSERT_TRUE(files.write(1, 30, {}, state.capture_checkpoint(1, 30))) << "the fault cleared";
        io.crash();
        EXPECT_EQ(newest_loadable(log::checkpoint_files(dir.path() / "checkpoints")), 30u);
    }
}

// A crash right after the failure keeps the previous checkpoint (never a
// partial one).
TEST(CheckpointFaults, ACrashAfterAFailedCheckpointKeepsThePreviousOne) {
    const state::group_state state;
    temp_dir dir{"dstream-ckpt-faults"};
    faulty_file_io io{dir.path()};
    log::checkpoint_files files(dir.path() / "checkpoints", io);
    ASSERT_TRUE(files.write(1, 10, {}, state.capture_checkpoint(1, 10)));
    io.inject(file_op::sync_dir, "/checkpoints", fault::fail(EIO));
    ASSERT_FALSE(files.write(1, 20, {}, state.capture_checkpoint(1, 20)));
    io.crash();
    EXPECT_EQ(newest_loadable(log::checkpoint_files(dir.path() / "checkpoints")), 10u);
    EXPECT_EQ(temporary_files(dir.path()), 0u);
}

TEST(ObjectStoreFaults, AFailedPutLeavesNoObjectOrAWholeOne) {
    const std::vector<fault_case> cases = {
        {"create", file_op::open, ".tmp", fault::fail(ENOSPC)},
        {"write", file_op::write, ".tmp", fault::fail(ENOSPC)},
        {"torn write", file_op::write, ".tmp", fault::torn_write(100, EIO)},
        {"flush", file_op::sync, ".tmp", fault::fail(EIO)},
        {"rename", file_op::rename, ".tmp", fault::fail(EIO)},
        {"object's directory", file_op::sync_dir, "/chunks/ab", fault::fail(EIO)},
        {"new directory", file_op::mkdir, "/chunks/cd", fault::fail(ENOSPC)},
        {"new directory's sync", file_op::sync_dir, "/objects/chunks", fault::fail(EIO)},
    };
    const std::string first(3000, 'a');
    const std::string second(5000, 'b');
    for (const auto& c : cases) {
        SCOPED_TRACE(c.name);
        temp_dir dir{"dstream-object-faults"};
        faulty_file_io io{dir.path()};
        storage::local_dir_object_store store(dir.path() / "objects", io);
        ASSERT_TRUE(store.put("chunks/ab/one", first));
        const std::string key =
            c.op == file_op::sync_dir && std::string(c.path_part) == "/chunks/ab" ? "chunks/ab/two"
                                                                                  : "chunks/cd/two";

        io.inject(c.op, c.path_part, c.f);
        const status failed = store.put(key, second);
        ASSERT_FALSE(failed);
        EXPECT_EQ(failed.err().code, error_code::cold_store_failed);
        EXPECT_EQ(io.fired(), 1);
        const auto size = store.size(key);
        ASSERT_TRUE(size);
        EXPECT_TRUE(!*size || **size == second.size()) << "whole or absent";
        EXPECT_EQ(temporary_files(dir.path()), 0u);
        const auto listed = store.list("chunks/");
        ASSERT_TRUE(listed);
        for (const auto& e : *listed) EXPECT_FALSE(e.key.ends_with(".tmp")) << e.key;

        // The cold tier repeats a failed flush under the same key.
        ASSERT_TRUE(store.put(key, second)) << "the fault cleared";
        io.crash();
        storage::local_dir_object_store again(dir.path() / "objects");
        std::string out;
        ASSERT_TRUE(again.get("chunks/ab/one", 0, first.size(), out));
        EXPECT_EQ(out, first);
        ASSERT_TRUE(again.get(key, 0, second.size(), out));
        EXPECT_EQ(out, second);
    }
}

// Before the fault clears, a crash leaves the failed object absent or whole.
TEST(ObjectStoreFaults, ACrashAfterAFailedPutLeavesNoPartialObject) {
    for (const fault f : {fault::torn_write(100, ENOSPC), fault::fail(EIO)}) {
        temp_dir dir{"dstream-object-faults"};
        faulty_file_io io{dir.path()};
        storage::local_dir_object_store store(dir.path() / "objects", io);
        io.inject(f.what == fault::kind::fail ? file_op::sync : file_op::write, ".tmp", f);
        ASSERT_FALSE(store.put("chunks/ab/one", std::string(5000, 'x')));
        io.crash();
        storage::local_dir_object_store again(dir.path() / "objects");
        EXPECT_EQ(*again.size("chunks/ab/one"), std::nullopt);
        EXPECT_EQ(temporary_files(dir.path()), 0u);
    }
}

using sizes = std::vector<std::optional<std::uint64_t>>;

// A local object store on a disk that fails on cue and loses power.
struct store_on_faulty_disk {
    temp_dir dir{"dstream-object-faults"};
    faulty_file_io io{dir.path()};
    storage::local_dir_object_store store{dir.path() / "objects", io};

    // Removes a directory behind the store's back, for good.
    void remove_durably(const std::string& key_prefix) {
        const fs::path gone = dir.path() / "objects" / key_prefix;
        fs::remove_all(gone);
        ASSERT_TRUE(fsync_directory(gone.parent_path(), io));
    }

    // Cuts the power now and reads, from what survived, each key's size.
    sizes sizes_after_power_cut(const std::vector<std::string>& keys) {
        io.set_hook({});
        io.power_cut();
        io.crash();
        storage::local_dir_object_store again(dir.path() / "objects");
        sizes out;
        for (const auto& key : keys) out.push_back(*again.size(key));
        return out;
    }
};

// The store remembers the directories it made durable: a second object in
// one syncs that directory alone (for the object's name), and both objects
// outlive a power cut.
TEST(ObjectStoreFaults, APutIntoADirectoryMadeDurableSyncsOnlyThatDirectory) {
    store_on_faulty_disk disk;
    std::atomic<int> directory_syncs{0};
    disk.io.set_hook([&](file_op op, const std::string&) {
        if (op == file_op::sync_dir) ++directory_syncs;
    });
    ASSERT_TRUE(disk.store.put("chunks/ab/cd/1/first", "one"));
    EXPECT_EQ(directory_syncs.exchange(0), 5) << "four parents, then the name's directory";
    ASSERT_TRUE(disk.store.put("chunks/ab/cd/1/second", "two"));
    EXPECT_EQ(directory_syncs.load(), 1);
    EXPECT_EQ(disk.sizes_after_power_cut({"chunks/ab/cd/1/first", "chunks/ab/cd/1/second"}),
              (sizes{3, 3}));
}

// A new stream's first object, in a bucket of streams made durable by
// another's, syncs the bucket and the directories it adds, not the way up to
// the root: each sync is a device flush.
TEST(ObjectStoreFaults, ANewDirectoryBesideOneMadeDurableSyncsOnlyBelowTheirAncestor) {
    store_on_faulty_disk disk;
    ASSERT_TRUE(disk.store.put("chunks/ab/cd/1/first", "one"));
    std::vector<std::string> synced;
    disk.io.set_hook([&](file_op op, const std::string& path) {
        if (op == file_op::sync_dir)
            synced.push_back(fs::path(path).lexically_relative(disk.dir.path()));
    });
    ASSERT_TRUE(disk.store.put("chunks/ab/ef/2/other", "two"));
    EXPECT_EQ(synced, (std::vector<std::string>{"objects/chunks/ab/ef", "objects/chunks/ab",
                                                "objects/chunks/ab/ef/2"}));
    synced.clear();
    ASSERT_TRUE(disk.store.put("chunks/ab/ef/3/again", "three"));
    EXPECT_EQ(synced, (std::vector<std::string>{"objects/chunks/ab/ef", "objects/chunks/ab/ef/3"}));
    EXPECT_EQ(disk.sizes_after_power_cut(
                  {"chunks/ab/cd/1/first", "chunks/ab/ef/2/other", "chunks/ab/ef/3/again"}),
              (sizes{3, 3, 5}));
}

// A directory whose sync failed is not remembered: the next put syncs the
// way up again, or its object would vanish with the directory at a power cut.
TEST(ObjectStoreFaults, ADirectoryWhoseSyncFailedIsMadeDurableByTheNextPut) {
    store_on_faulty_disk disk;
    disk.io.inject(file_op::sync_dir, "chunks/ab", fault::fail(EIO));
    ASSERT_FALSE(disk.store.put("chunks/ab/cd/1/first", "one"));
    ASSERT_TRUE(disk.store.put("chunks/ab/cd/1/first", "one"));
    EXPECT_EQ(disk.sizes_after_power_cut({"chunks/ab/cd/1/first"}), (sizes{3}));
}

// A remembered directory removed behind the store's back is made again,
// with the ancestors removed with it, whether the next put goes beside it
// (below a remembered ancestor now gone) or into it.
TEST(ObjectStoreFaults, ARememberedDirectoryRemovedIsMadeAgain) {
    store_on_faulty_disk disk;
    ASSERT_TRUE(disk.store.put("chunks/ab/cd/1/first", "one"));
    disk.remove_durably("chunks/ab");
    ASSERT_TRUE(disk.store.put("chunks/ab/cd/2/beside", "two"));
    ASSERT_TRUE(disk.store.put("chunks/ab/cd/1/second", "three"));
    EXPECT_EQ(disk.sizes_after_power_cut({"chunks/ab/cd/2/beside", "chunks/ab/cd/1/second"}),
              (sizes{3, 5}));
}

TEST(DurableDirsFaults, AFailedCreationOrSyncIsReported) {
    temp_dir dir{"dstream-dir-faults"};
    faulty_file_io io{dir.path()};
    std::error_code ec;
    io.inject(file_op::mkdir, "/a/b", fault::fail(ENOSPC));
    EXPECT_FALSE(create_durable_directories(dir.path(), dir.path() / "a" / "b", ec, io));
    EXPECT_EQ(ec, std::error_code(ENOSPC, std::generic_category()));
    io.inject(file_op::sync_dir, "/a", fault::fail(EIO));
    EXPECT_FALSE(create_durable_directories(dir.path(), dir.path() / "a" / "b", ec, io));
    EXPECT_TRUE(create_durable_directories(dir.path(), dir.path() / "a" / "b", ec, io));
    io.crash();
    EXPECT_TRUE(fs::is_directory(dir.path() / "a" / "b")) << "synced into its parent";
}

// The base a caller took for durable may have been removed since: what this
// call makes again above it is synced too.
TEST(DurableDirsFaults, ABaseFoundGoneIsMadeDurableAgain) {
    temp_dir dir{"dstream-dir-faults"};
    faulty_file_io io{dir.path()};
    std::error_code ec;
    ASSERT_TRUE(create_durable_directories(dir.path(), dir.path() / "a" / "b", ec, io));
    fs::remove_all(dir.path() / "a");
    ASSERT_TRUE(fsync_directory(dir.path(), io));
    ASSERT_TRUE(
        create_durable_directories(dir.path() / "a" / "b", dir.path() / "a" / "b" / "c", ec, io));
    io.power_cut();
    io.crash();
    EXPECT_TRUE(fs::is_directory(dir.path() / "a" / "b" / "c"));
}

TEST(NodeMetaFaults, AFileThatCannotBeMadeDurableStopsTheStart) {
    for (const fault_case& c : std::vector<fault_case>{
             {"write", file_op::write, "node.meta", fault::fail(ENOSPC)},
             {"flush", file_op::sync, "node.meta", fault::fail(EIO)},
             {"rename", file_op::rename, "node.meta", fault::fail(EIO)},
         }) {
        SCOPED_TRACE(c.name);
        temp_dir dir{"dstream-meta-faults"};
        faulty_file_io io{dir.path()};
        io.inject(c.op, c.path_part, c.f);
        EXPECT_THROW(runtime::load_or_create_node_meta(dir.path() / "data", 4, io),
                     std::runtime_error);
        EXPECT_FALSE(fs::exists(dir.path() / "data" / "node.meta"));
        const auto meta = runtime::load_or_create_node_meta(dir.path() / "data", 4, io);
        io.crash();
        EXPECT_EQ(runtime::load_or_create_node_meta(dir.path() / "data", 4).cluster_id,
                  meta.cluster_id);
    }
}

}  // namespace
}  // namespace dstream::test
