#pragma once
// Checkpoint files of the groups' state machines, under <data-dir>/checkpoints:
// g<group>-<index>.ckpt, written to a temporary name, fsync'd, renamed; the
// newest one per group is the one recovery loads. A checkpoint is its log's
// snapshot: the log's header (replication/raft_records.h: the Raft metadata)
// comes before the state's image (docs/disk-format.md).
#include <cstdint>
#include <filesystem>
#include <map>
#include <string>
#include <string_view>

#include "base/file_io.h"
#include "base/result.h"
#include "state/group_state.h"

namespace dstream::log {

class checkpoint_files {
public:
    explicit checkpoint_files(std::filesystem::path dir, file_io& io = posix_file_io());

    // Blocking: run on the I/O pool. Writes `header` (with its CRC), the
    // image and its CRC trailer, then removes the group's older checkpoints.
    status write(std::uint32_t group, std::uint64_t index, std::string_view header,
                 const state::checkpoint_image& image);

    struct entry {
        std::uint64_t index = 0;
        std::filesystem::path path;
    };
    // The newest checkpoint of each group that has one.
    std::map<std::uint32_t, entry> newest() const;

    struct loaded {
        std::string header;  // empty in a checkpoint written before the log had one
        std::string image;   // the state's image, its CRC trailer included
    };
    // Reads a checkpoint; an error names the file when its header is damaged
    // (the image's own checks are the state's).
    result<loaded> load(const entry& which) const;

private:
    std::filesystem::path _dir;
    file_io& _io;
};

}  // namespace dstream::log
