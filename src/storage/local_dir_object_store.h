#pragma once
// An object store in a local directory: one file per object, written to a
// temporary name, fsync'd and renamed, so an object is whole or absent.
#include <filesystem>
#include <mutex>
#include <string>
#include <unordered_set>

#include "base/file_io.h"
#include "storage/object_store.h"

namespace dstream::storage {

class local_dir_object_store final : public object_store {
public:
    explicit local_dir_object_store(std::filesystem::path root, file_io& io = posix_file_io());

    status put(const std::string& key, std::string_view bytes) override;
    result<std::unique_ptr<object_writer>> open_writer(const std::string& key) override;
    status get(const std::string& key, std::uint64_t offset, std::uint64_t length,
               std::string& out) override;
    std::shared_ptr<const object_file> open_file(const std::string& key) override;
    result<std::optional<std::uint64_t>> size(const std::string& key) override;
    status remove(const std::string& key) override;
    result<std::vector<object_entry>> list(const std::string& prefix) override;

private:
    std::filesystem::path path_of(const std::string& key) const;
    // Creates `dir` and makes it and every directory up to the root durable,
    // unless this store did so already: a put into a directory it made
    // durable syncs only that directory (for its new name), and one into a
    // new directory syncs the way up to the nearest one it made durable.
    bool make_durable(const std::filesystem::path& dir);
    // Forgets `dir`, found gone: the next put makes it again, with whatever
    // was removed with it (create_durable_directories syncs what it makes).
    void forget_durable(const std::filesystem::path& dir);

    std::filesystem::path _root;
    file_io& _io;
    std::mutex _durable_mutex;
    // Directories this store made durable, with their ancestors below the
    // root. The store never removes one, so an entry stays true until
    // something else does (then forget_durable). Cleared when full: the next
    // puts walk the directories again.
    std::unordered_set<std::string> _durable_dirs;
};

}  // namespace dstream::storage
