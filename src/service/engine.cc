#include "service/engine.h"

#include <stdexcept>

#include "runtime/async_slot.h"
#include "service/group.h"

namespace dstream::service {
namespace {

namespace asio = boost::asio;

std::string_view key_of_body(const state::command_body& body) {
    return std::visit(
        [](const auto& c) -> std::string_view {
            if constexpr (requires { c.key; }) {
                return c.key;
            } else {
                return {};
            }
        },
        body);
}

// FNV-1a: stable across builds and platforms, so a stream keeps its group.
std::uint64_t stable_hash(std::string_view key) {
    std::uint64_t h = 0xcbf29ce484222325ULL;
    for (unsigned char c : key) {
        h ^= c;
        h *= 0x100000001b3ULL;
    }
    return h;
}

void post_proposal(group& g, state::command_body body,
                   std::shared_ptr<runtime::async_slot<state::apply_result>> slot) {
    asio::post(g.strand(), [&g, body = std::move(body), slot = std::move(slot)]() mutable {
        g.propose(std::move(body), [slot](state::apply_result r) { slot->deliver(std::move(r)); });
    });
}

void post_read(group& g, read_request request,
               std::shared_ptr<runtime::async_slot<stream_view>> slot) {
    asio::post(g.strand(), [&g, request = std::move(request), slot = std::move(slot)] {
        slot->deliver(g.read(request));
    });
}

void post_watch(group& g, std::string key, std::uint64_t incarnation, std::uint64_t offset,
                std::shared_ptr<runtime::wake_signal> signal) {
    asio::post(g.strand(), [&g, key = std::move(key), incarnation, offset,
                            signal = std::move(signal)] {
        if (!g.watch(key, incarnation, offset, signal)) signal->fire();
    });
}

}  // namespace

engine::engine(asio::io_context& io, std::size_t group_count) {
    _groups.reserve(group_count);
    for (std::size_t i = 0; i < group_count; ++i) {
        _groups.push_back(std::make_unique<group>(asio::make_strand(io)));
    }
}

void engine::replay(std::size_t group, std::uint64_t index, std::string_view record) {
    if (group >= _groups.size()) {
        throw std::runtime_error("the log holds group " + std::to_string(group) + " but the node runs " +
                                 std::to_string(_groups.size()) +
                                 " groups: start it with the --groups it was created with");
    }
    _groups[group]->replay(index, record);
}

void engine::attach_logs(const log_factory& make_log) {
    for (std::size_t i = 0; i < _groups.size(); ++i) {
        _groups[i]->attach_log(make_log(i, _groups[i]->strand()));
    }
}

engine::~engine() = default;

void engine::start() {
    for (auto& g : _groups) {
        asio::post(g->strand(), [g = g.get()] { g->start(); });
    }
}

group& engine::group_for(std::string_view key) {
    return *_groups[stable_hash(key) % _groups.size()];
}

asio::awaitable<state::apply_result> engine::write(state::command_body& body) {
    auto slot = std::make_shared<runtime::async_slot<state::apply_result>>(
        co_await asio::this_coro::executor);
    group& g = group_for(key_of_body(body));  // before `body` moves away
    post_proposal(g, std::move(body), slot);
    co_return co_await slot->take();
}

asio::awaitable<stream_view> engine::read(const read_request& request) {
    auto slot = std::make_shared<runtime::async_slot<stream_view>>(co_await asio::this_coro::executor);
    post_read(group_for(request.key), request, slot);
    co_return co_await slot->take();
}

asio::awaitable<void> engine::wait(const std::string& key, std::uint64_t incarnation,
                                   std::uint64_t offset,
                                   std::chrono::steady_clock::time_point deadline) {
    auto signal = std::make_shared<runtime::wake_signal>(co_await asio::this_coro::executor, deadline);
    post_watch(group_for(key), key, incarnation, offset, signal);
    co_await signal->wait();
}

}  // namespace dstream::service
