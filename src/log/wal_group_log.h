#pragma once
// The command log of one group, backed by the node's WAL.
#include <utility>
#include <boost/asio/any_io_executor.hpp>

#include "log/command_log.h"
#include "log/node_wal.h"

namespace dstream::log {

class wal_group_log final : public command_log, private wal_sink {
public:
    // `last_index`: the group's highest index found by recovery.
    wal_group_log(node_wal& wal, std::uint32_t group, boost::asio::any_io_executor strand,
                  std::uint64_t last_index)
        : _wal(wal), _group(group), _strand(std::move(strand)), _last_index(last_index) {}

    std::uint64_t append(std::string record) override;
    void on_durable(durable_handler handler) override { _handler = std::move(handler); }
    void release(std::uint64_t index) override { _wal.release(_group, index); }

private:
    void on_written(std::uint64_t index, const status& st) override;

    node_wal& _wal;
    std::uint32_t _group;
    boost::asio::any_io_executor _strand;
    std::uint64_t _last_index;
    durable_handler _handler;
};

}  // namespace dstream::log
