#include "base/durable_dirs.h"

#include <cstdlib>
#include <filesystem>
#include <string>

#include <gtest/gtest.h>

namespace dstream {
namespace {

namespace fs = std::filesystem;

class DurableDirs : public ::testing::Test {
protected:
    void SetUp() override {
        std::string templ = (fs::temp_directory_path() / "durable-dirs-XXXXXX").string();
        ASSERT_NE(::mkdtemp(templ.data()), nullptr);
        _root = templ;
    }
    void TearDown() override { fs::remove_all(_root); }
    fs::path _root;
};

TEST_F(DurableDirs, CreatesEveryDirectoryBelowTheBase) {
    std::error_code ec;
    const fs::path dir = _root / "objects" / "chunks" / "ab" / "cdef";
    ASSERT_TRUE(create_durable_directories(_root, dir, ec)) << ec.message();
    EXPECT_TRUE(fs::is_directory(dir));
}

// Another thread's directory, or a crashed process's, is synced again rather
// than trusted: finding it is no failure.
TEST_F(DurableDirs, AcceptsDirectoriesThatExist) {
    std::error_code ec;
    const fs::path dir = _root / "a" / "b";
    fs::create_directories(dir);
    EXPECT_TRUE(create_durable_directories(_root, dir, ec)) << ec.message();
    EXPECT_TRUE(create_durable_directories(dir, ec)) << ec.message();
}

TEST_F(DurableDirs, StartsAtTheNearestExistingAncestor) {
    std::error_code ec;
    const fs::path dir = _root / "x" / "y" / "z";
    ASSERT_TRUE(create_durable_directories(dir, ec)) << ec.message();
    EXPECT_TRUE(fs::is_directory(dir));
}

TEST_F(DurableDirs, FailsWhereADirectoryCannotBe) {
    std::error_code ec;
    const fs::path file = _root / "file";
    {
        std::FILE* f = std::fopen(file.c_str(), "w");
        ASSERT_NE(f, nullptr);
        std::fclose(f);
    }
    EXPECT_FALSE(create_durable_directories(_root, file / "below", ec));
    EXPECT_TRUE(ec);
}

}  // namespace
}  // namespace dstream
