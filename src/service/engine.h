#pragma once
// The stream engine of one node: G groups, each a state machine fed by its
// own command log and run on its own strand. Streams hash to groups.
#include <utility>
#include <boost/asio/io_context.hpp>
#include <boost/asio/strand.hpp>
#include <functional>
#include <memory>
#include <vector>

#include "log/command_log.h"
#include "service/stream_service.h"

namespace dstream::service {

class group;

struct engine_options {
    std::size_t group_count = 16;
    // Makes the command log of group `index` on its strand.
    std::function<std::unique_ptr<log::command_log>(std::size_t index,
                                                    boost::asio::any_io_executor strand)>
        make_log;
};

class engine final : public stream_service {
public:
    engine(boost::asio::io_context& io, engine_options options);
    ~engine() override;

    // Draws each new group's history id; run once before serving.
    void start();

    boost::asio::awaitable<state::apply_result> write(state::command_body& body) override;
    boost::asio::awaitable<stream_view> read(const read_request& request) override;
    boost::asio::awaitable<void> wait(const std::string& key, std::uint64_t incarnation,
                                      std::uint64_t offset,
                                      std::chrono::steady_clock::time_point deadline) override;

private:
    group& group_for(std::string_view key);

    std::vector<std::unique_ptr<group>> _groups;
};

}  // namespace dstream::service
