#include "runtime/io_threads.h"

#include <algorithm>
#include <thread>

#include "runtime/compact_strand.h"

namespace dstream::runtime {
namespace {

std::vector<std::unique_ptr<boost::asio::io_context>> make_contexts(std::size_t count) {
    std::vector<std::unique_ptr<boost::asio::io_context>> contexts;
    for (std::size_t i = 0; i < std::max<std::size_t>(count, 1); ++i) {
        // A hint of one thread: posts made on that thread take its private
        // queue.
        contexts.push_back(std::make_unique<boost::asio::io_context>(1));
        boost::asio::make_service<detail::one_thread_context>(*contexts.back());
    }
    return contexts;
}

std::vector<boost::asio::io_context*> pointers(
    const std::vector<std::unique_ptr<boost::asio::io_context>>& contexts) {
    std::vector<boost::asio::io_context*> all;
    for (const auto& c : contexts) all.push_back(c.get());
    return all;
}

}  // namespace

io_threads::io_threads(std::size_t count)
    : _contexts(make_contexts(count)), _view(pointers(_contexts)) {
    for (const auto& c : _contexts) _busy.push_back(boost::asio::make_work_guard(*c));
}

io_threads::~io_threads() = default;

void io_threads::run() {
    std::vector<std::thread> threads;
    for (std::size_t i = 1; i < _contexts.size(); ++i) {
        threads.emplace_back([&io = *_contexts[i]] { io.run(); });
    }
    _contexts.front()->run();
    for (auto& t : threads) t.join();
}

void io_threads::stop() {
    for (auto& c : _contexts) c->stop();
}

}  // namespace dstream::runtime
