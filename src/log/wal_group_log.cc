#include "log/wal_group_log.h"

#include <boost/asio/post.hpp>

namespace dstream::log {

std::uint64_t wal_group_log::append(std::string record) {
    const std::uint64_t index = ++_last_index;
    _wal.submit(_group, index, std::move(record), this);
    return index;
}

void wal_group_log::on_written(std::uint64_t index, const status& st) {
    boost::asio::post(_strand, [this, index, st] { _handler(index, st); });
}

}  // namespace dstream::log
