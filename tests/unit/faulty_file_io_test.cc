// The fault-injecting file_io the storage fault tests stand on: faults fire
// where and as often as asked, and a crash leaves exactly what POSIX promises
// (synced bytes under synced names), with Linux's handling of a failed flush.
#include "faulty_file_io.h"

#include <fcntl.h>
#include <fstream>
#include <iterator>
#include <string>
#include <unistd.h>

#include <gtest/gtest.h>

#include "base/durable_dirs.h"
#include "temp_dir.h"

namespace dstream::test {
namespace {

namespace fs = std::filesystem;

std::string contents(const fs::path& p) {
    std::ifstream in(p, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
}

class FaultyFileIo : public ::testing::Test {
protected:
    // A file created and synced with its name: durable whole.
    int create(const std::string& name, std::string_view bytes) {
        const int fd = io.open(path(name).c_str(), O_WRONLY | O_CREAT | O_APPEND, 0644);
        EXPECT_GE(fd, 0);
        EXPECT_TRUE(write_all(io, fd, bytes));
        EXPECT_EQ(io.fdatasync(fd), 0);
        EXPECT_TRUE(fsync_directory(dir.path(), io));
        return fd;
    }
    std::string path(const std::string& name) const { return (dir.path() / name).string(); }

    temp_dir dir{"dstream-faulty-io"};
    faulty_file_io io{dir.path()};
};

TEST_F(FaultyFileIo, ACrashKeepsSyncedBytesUnderSyncedNamesOnly) {
    const int fd = create("kept", "synced");
    ASSERT_TRUE(write_all(io, fd, "-unsynced"));
    io.close(fd);
    const int other = io.open(path("nameless").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_TRUE(write_all(io, other, "bytes"));
    ASSERT_EQ(io.fdatasync(other), 0) << "its bytes are durable, its name is not";
    io.close(other);
    io.crash();
    EXPECT_EQ(contents(path("kept")), "synced");
    EXPECT_FALSE(fs::exists(path("nameless")));
}

TEST_F(FaultyFileIo, ARenameIsDurableOnceItsDirectoryIsSynced) {
    io.close(create("old", "A"));
    const int fd = io.open(path("new.tmp").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_TRUE(write_all(io, fd, "B"));
    ASSERT_EQ(io.fdatasync(fd), 0);
    io.close(fd);
    ASSERT_EQ(io.rename(path("new.tmp").c_str(), path("old").c_str()), 0);
    io.crash();
    EXPECT_EQ(contents(path("old")), "A") << "the rename was not synced";

    const int again = io.open(path("new.tmp").c_str(), O_WRONLY | O_CREAT, 0644);
    ASSERT_TRUE(write_all(io, again, "B"));
    ASSERT_EQ(io.fdatasync(again), 0);
    io.close(again);
    ASSERT_EQ(io.rename(path("new.tmp").c_str(), path("old").c_str()), 0);
    ASSERT_TRUE(fsync_directory(dir.path(), io));
    io.crash();
    EXPECT_EQ(contents(path("old")), "B");
    EXPECT_FALSE(fs::exists(path("new.tmp")));
}

TEST_F(FaultyFileIo, FaultsFireOnTheirPathAfterTheirSkipAsOftenAsAsked) {
    const int a = create("a.wal", "");
    const int b = create("b.ckpt", "");
    io.inject(file_op::write, ".wal", fault::fail(ENOSPC), 2, 1);
    EXPECT_EQ(io.write(b, "x", 1), 1) << "another path";
    EXPECT_EQ(io.write(a, "x", 1), 1) << "skipped";
    errno = 0;
    EXPECT_EQ(io.write(a, "x", 1), -1);
    EXPECT_EQ(errno, ENOSPC);
    EXPECT_EQ(io.write(a, "x", 1), -1);
    EXPECT_EQ(io.write(a, "x", 1), 1) << "twice only";
    EXPECT_EQ(io.fired(), 2);
    io.inject(file_op::write, ".wal", fault::short_write(2));
    EXPECT_EQ(io.write(a, "12345", 5), 2);
    io.inject(file_op::write, ".wal", fault::torn_write(3, EIO));
    EXPECT_EQ(io.write(a, "abcde", 5), -1);
    EXPECT_EQ(contents(path("a.wal")), "xx12abc") << "the torn write left its prefix";
    io.inject(file_op::rename, "b.ckpt", fault::fail(EIO), -1);
    EXPECT_NE(io.rename(path("a.wal").c_str(), path("b.ckpt").c_str()), 0) << "either path";
    io.clear();
    EXPECT_EQ(io.rename(path("a.wal").c_str(), path("c").c_str()), 0);
    io.close(a);
    io.close(b);
}

// Linux after a failed writeback: the pages are clean but not on disk, so a
// later successful flush does not save them; every open descriptor hears of
// the error once.
TEST_F(FaultyFileIo, AFailedFlushLosesItsPagesAndEveryDescriptorHearsOfIt) {
    const int fd = create("log", "head|");
    const int other = io.open(path("log").c_str(), O_RDONLY, 0);
    ASSERT_TRUE(write_all(io, fd, "lost|"));
    io.inject(file_op::sync, "log", fault::fail(EIO));
    EXPECT_NE(io.fdatasync(fd), 0);
    EXPECT_EQ(io.fdatasync(fd), 0) << "reported once per descriptor";
    EXPECT_NE(io.fdatasync(other), 0) << "the other descriptor was open at the error";
    EXPECT_EQ(io.fdatasync(other), 0);
    const int later = io.open(path("log").c_str(), O_RDONLY, 0);
    EXPECT_EQ(io.fdatasync(later), 0) << "opened after the error was reported";
    ASSERT_TRUE(write_all(io, fd, "tail"));
    ASSERT_EQ(io.fdatasync(fd), 0);
    for (const int d : {fd, other, later}) io.close(d);
    io.crash();
    EXPECT_EQ(contents(path("log")), std::string("head|") + std::string(5, '\0') + "tail");
}

TEST_F(FaultyFileIo, APowerCutFixesWhatSurvivesAndMayTearUnsyncedBytes) {
    const int fd = create("seg.wal", "durable|");
    ASSERT_TRUE(write_all(io, fd, "0123456789"));
    io.power_cut(".wal", 4);
    ASSERT_EQ(io.fdatasync(fd), 0) << "calls go on after the cut";
    io.close(fd);
    io.crash();
    EXPECT_EQ(contents(path("seg.wal")), "durable|0123");
}

}  // namespace
}  // namespace dstream::test
