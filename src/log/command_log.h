#pragma once
// The ordered, durable command log of one group. A local WAL backs it on a
// single node, a Raft log in a cluster; the group engine sees only this.
#include <cstdint>
#include <string_view>

#include "base/result.h"
#include "base/unique_function.h"

namespace dstream::log {

class command_log {
public:
    // Called, in index order and on the group's executor, once every entry up
    // to `index` is durable, or with an error when the log cannot persist.
    using durable_handler = unique_function<void(std::uint64_t index, status)>;

    virtual ~command_log() = default;

    // Appends an encoded command and returns its index (1, 2, ...).
    virtual std::uint64_t append(std::string record) = 0;
    virtual void on_durable(durable_handler handler) = 0;
    // Every entry up to `index` is covered by a checkpoint: the log may drop
    // them. Any thread; it may delete files, so not one that serves requests.
    virtual void release(std::uint64_t /*index*/) {}
};

}  // namespace dstream::log
