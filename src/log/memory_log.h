#pragma once
// A command log that keeps nothing: every entry is "durable" at once. For
// `--memory` (tests and demos): a restart loses every stream.
#include <boost/asio/any_io_executor.hpp>

#include "log/command_log.h"

namespace dstream::log {

class memory_log final : public command_log {
public:
    explicit memory_log(boost::asio::any_io_executor group_executor)
        : _executor(std::move(group_executor)) {}

    std::uint64_t append(std::string record) override;
    void on_durable(durable_handler handler) override { _handler = std::move(handler); }

private:
    boost::asio::any_io_executor _executor;
    durable_handler _handler;
    std::uint64_t _next_index = 1;
    bool _notify_posted = false;
};

}  // namespace dstream::log
