#include "service/live_subscription.h"

namespace dstream::service {

live_subscription::live_subscription(boost::asio::any_io_executor reader,
                                     std::chrono::steady_clock::time_point deadline)
    : _home(&boost::asio::query(reader, boost::asio::execution::context)),
      _deadline(std::move(reader), deadline) {}

void live_subscription::start() {
    _deadline.async_wait([weak = weak_from_this()](boost::system::error_code ec) {
        if (ec) return;
        if (const auto self = weak.lock()) self->end();
    });
}

live_subscription::offered live_subscription::offer(const update_ptr& update) {
    std::unique_lock lock(_mutex);
    if (_ended) return offered::ended;
    if (_reader && _sink != nullptr) {  // the queue is empty
        // Under the lock, so that nothing resumes the reader (end(), say)
        // while the sink writes.
        if (_sink->take(update) == live_sink::taken::whole) return offered::kept;
        resume_reader(lock, update);
        return offered::kept;
    }
    if (_reader) {  // the queue is empty
        resume_reader(lock, update);
        return offered::kept;
    }
    if (_queue.size() >= max_queued) {
        _ended = true;
        return offered::behind;
    }
    _queue.push_back(update);
    return offered::kept;
}

void live_subscription::end() {
    std::unique_lock lock(_mutex);
    _ended = true;
    if (_reader) resume_reader(lock, nullptr);
}

void live_subscription::resume_reader(std::unique_lock<std::mutex>& lock, update_ptr update) {
    runtime::deliver_fn<update_ptr> reader = std::move(*_reader);
    _reader.reset();
    lock.unlock();
    reader(std::move(update));
}

void live_subscription::set_sink(live_sink* sink) {
    const std::lock_guard lock(_mutex);
    _sink = sink;
}

bool live_subscription::has_queued() const {
    const std::lock_guard lock(_mutex);
    return !_queue.empty();
}

live_subscription::update_ptr live_subscription::take_queued() {
    const std::lock_guard lock(_mutex);
    if (_queue.empty()) return nullptr;
    update_ptr update = std::move(_queue.front());
    _queue.pop_front();
    return update;
}

boost::asio::awaitable<live_subscription::update_ptr> live_subscription::next() {
    return runtime::await_callback<update_ptr>(
        [self = shared_from_this()](runtime::deliver_fn<update_ptr> reader) {
            std::unique_lock lock(self->_mutex);
            if (self->_queue.empty() && !self->_ended) {
                self->_reader.emplace(std::move(reader));
                return;
            }
            update_ptr update;
            if (!self->_queue.empty()) {
                update = std::move(self->_queue.front());
                self->_queue.pop_front();
            }
            lock.unlock();
            reader(std::move(update));
        });
}

}  // namespace dstream::service
