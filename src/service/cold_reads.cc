#include "service/cold_reads.h"

#include <algorithm>

#include <boost/asio/post.hpp>

#include "runtime/await_callback.h"
#include "service/cold_tier.h"
#include "storage/byte_pipe.h"

namespace dstream::service {
namespace {

// Bytes one read holds waiting for its reader: a few socket writes' worth.
constexpr std::size_t stream_buffer_bytes = 256u << 10;

// Hands the pieces to `pipe` in order; a store's failure, before the first
// byte or after some, is the read's refusal (the store has retried already).
void produce(storage::object_store& store, const std::vector<streamed_piece>& pieces,
             storage::byte_pipe& pipe) {
    for (const auto& piece : pieces) {
        if (piece.cached) {
            const char* data = piece.cached->data() + piece.offset;
            if (!pipe.push(byte_slice{piece.cached, data, piece.length})) return;
            continue;
        }
        if (!store.stream_range(piece.object_key, piece.offset, piece.length, pipe)) {
            pipe.fail(cold_read_refusal());
            return;
        }
        if (pipe.abandoned()) return;  // no GET for pieces nobody will read
    }
    pipe.finish();
}

}  // namespace

class cold_read_pool::stream final : public cold_stream {
public:
    stream(cold_read_pool& pool, storage::object_store& store, std::vector<streamed_piece> pieces)
        : _pool(pool),
          _store(store),
          _pieces(std::move(pieces)),
          _pipe(std::make_shared<storage::byte_pipe>(stream_buffer_bytes)) {
        for (const auto& piece : _pieces) _size += piece.length;
    }
    ~stream() override { _pipe->abandon(); }

    std::uint64_t size() const override { return _size; }

    boost::asio::awaitable<result<storage::byte_pipe::batch>> next() override {
        if (!_started) {
            _started = true;
            _pool.start(_store, std::move(_pieces), _pipe);
        }
        return runtime::await_callback<result<storage::byte_pipe::batch>>(
            [pipe = _pipe](runtime::deliver_fn<result<storage::byte_pipe::batch>> done) {
                pipe->take(std::move(done));
            });
    }

private:
    cold_read_pool& _pool;
    storage::object_store& _store;
    std::vector<streamed_piece> _pieces;  // until started
    std::shared_ptr<storage::byte_pipe> _pipe;
    std::uint64_t _size = 0;
    bool _started = false;
};

std::shared_ptr<cold_stream> cold_read_pool::open(storage::object_store& store,
                                                  std::vector<streamed_piece> pieces) {
    return std::make_shared<stream>(*this, store, std::move(pieces));
}

void cold_read_pool::start(storage::object_store& store, std::vector<streamed_piece> pieces,
                           std::shared_ptr<storage::byte_pipe> pipe) {
    boost::asio::post(_threads, [this, &store, pieces = std::move(pieces), pipe = std::move(pipe)] {
        if (!enter(pipe)) return;
        produce(store, pieces, *pipe);
        leave(pipe);
    });
}

bool cold_read_pool::enter(const std::shared_ptr<storage::byte_pipe>& pipe) {
    std::lock_guard lock(_mutex);
    if (_stopped) return false;
    _running.push_back(pipe);
    return true;
}

void cold_read_pool::leave(const std::shared_ptr<storage::byte_pipe>& pipe) {
    std::lock_guard lock(_mutex);
    _running.erase(std::find(_running.begin(), _running.end(), pipe));
}

void cold_read_pool::stop() {
    {
        std::lock_guard lock(_mutex);
        if (_stopped) return;
        _stopped = true;
        for (const auto& pipe : _running) pipe->abandon();
    }
    _threads.stop();
    _threads.join();
}

}  // namespace dstream::service
