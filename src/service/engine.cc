#include "service/engine.h"

#include "runtime/run_on.h"
#include "service/group.h"

namespace dstream::service {
namespace {

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

}  // namespace

engine::engine(boost::asio::io_context& io, engine_options options) {
    _groups.reserve(options.group_count);
    for (std::size_t i = 0; i < options.group_count; ++i) {
        auto g = std::make_unique<group>(boost::asio::make_strand(io));
        g->attach_log(options.make_log(i, g->strand()));
        _groups.push_back(std::move(g));
    }
}

engine::~engine() = default;

void engine::start() {
    for (auto& g : _groups) {
        boost::asio::post(g->strand(), [g = g.get()] { g->start(); });
    }
}

group& engine::group_for(std::string_view key) {
    return *_groups[stable_hash(key) % _groups.size()];
}

boost::asio::awaitable<state::apply_result> engine::write(state::command_body body) {
    group& g = group_for(key_of_body(body));
    return boost::asio::async_initiate<const boost::asio::use_awaitable_t<>&,
                                                   void(state::apply_result)>(
        [&g, body = std::move(body)](auto handler) mutable {
            boost::asio::post(g.strand(), [&g, body = std::move(body),
                                           h = std::move(handler)]() mutable {
                g.propose(std::move(body), [h = std::move(h)](state::apply_result r) mutable {
                    runtime::complete_on_own_executor(std::move(h), std::move(r));
                });
            });
        },
        boost::asio::use_awaitable);
}

boost::asio::awaitable<stream_view> engine::read(read_request request) {
    group& g = group_for(request.key);
    return runtime::run_on(g.strand(), [&g, request = std::move(request)] { return g.read(request); });
}

boost::asio::awaitable<void> engine::wait(const std::string& key, std::uint64_t incarnation,
                                          std::uint64_t offset,
                                          std::chrono::steady_clock::time_point deadline) {
    auto executor = co_await boost::asio::this_coro::executor;
    auto signal = std::make_shared<runtime::wake_signal>(executor, deadline);
    group& g = group_for(key);
    const bool waiting = co_await runtime::run_on(
        g.strand(), [&g, key, incarnation, offset, signal] {
            return g.watch(key, incarnation, offset, signal);
        });
    if (waiting) co_await signal->wait();
}

}  // namespace dstream::service
