#pragma once
// Checkpoint files of the groups' state machines, under <data-dir>/checkpoints:
// g<group>-<index>.ckpt, written to a temporary name, fsync'd, renamed; the
// newest one per group is the one recovery loads.
#include <cstdint>
#include <filesystem>
#include <map>

#include "base/file_io.h"
#include "base/result.h"
#include "state/group_state.h"

namespace dstream::log {

class checkpoint_files {
public:
    explicit checkpoint_files(std::filesystem::path dir, file_io& io = posix_file_io());

    // Blocking: run on the I/O pool. Appends the CRC trailer, then removes the
    // group's older checkpoints.
    status write(std::uint32_t group, std::uint64_t index, const state::checkpoint_image& image);

    struct entry {
        std::uint64_t index = 0;
        std::filesystem::path path;
    };
    // The newest checkpoint of each group that has one.
    std::map<std::uint32_t, entry> newest() const;

private:
    std::filesystem::path _dir;
    file_io& _io;
};

}  // namespace dstream::log
