#include "storage/byte_pipe.h"

#include <memory>
#include <string>


namespace dstream::storage {

bool byte_pipe::write(std::string_view bytes) {
    auto block = std::make_shared<const std::string>(bytes);
    const char* data = block->data();
    return push(byte_slice{std::move(block), data, bytes.size()});
}

bool byte_pipe::push(byte_slice slice) {
    std::unique_lock lock(_mutex);
    _space.wait(lock, [&] {
        return _phase == phase::abandoned || _queued_bytes == 0 ||
               _queued_bytes + slice.size <= _capacity;
    });
    if (_phase != phase::open) return false;
    _queued_bytes += slice.size;
    _queue.push_back(std::move(slice));
    wake_consumer(lock);
    return true;
}

void byte_pipe::finish() {
    std::unique_lock lock(_mutex);
    if (_phase != phase::open) return;
    _phase = phase::finished;
    wake_consumer(lock);
}

void byte_pipe::fail(error e) {
    std::unique_lock lock(_mutex);
    if (_phase != phase::open) return;
    _phase = phase::failed;
    _error = std::move(e);
    wake_consumer(lock);
}

bool byte_pipe::abandoned() {
    std::lock_guard lock(_mutex);
    return _phase == phase::abandoned;
}

void byte_pipe::abandon() {
    std::unique_lock lock(_mutex);
    _phase = phase::abandoned;
    _queue.clear();
    _queued_bytes = 0;
    // Its frames go outside the lock: they may hold the last owner of this pipe.
    deliver dropped = std::move(_waiting);
    lock.unlock();
    _space.notify_all();
}

result<byte_pipe::batch> byte_pipe::take_queued() {
    if (_queue.empty() && _phase == phase::failed) return *_error;
    batch taken(std::make_move_iterator(_queue.begin()), std::make_move_iterator(_queue.end()));
    _queue.clear();
    _queued_bytes = 0;
    return taken;
}

void byte_pipe::wake_consumer(std::unique_lock<std::mutex>& lock) {
    if (!_waiting) return;
    deliver done = std::move(_waiting);
    result<batch> taken = take_queued();
    lock.unlock();
    done(std::move(taken));
}

void byte_pipe::take(deliver done) {
    std::unique_lock lock(_mutex);
    if (!has_news()) {
        _waiting = std::move(done);
        return;
    }
    result<batch> taken = take_queued();
    lock.unlock();
    _space.notify_all();
    done(std::move(taken));
}

}  // namespace dstream::storage
