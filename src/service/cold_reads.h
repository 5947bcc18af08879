#pragma once
// Streamed cold reads (stream_service.h: cold_stream). A catch-up read of
// chunks in a store that streams (S3) and that the chunk cache does not hold
// sends each ranged GET's body on as it arrives, through a bounded buffer
// (storage/byte_pipe.h), instead of loading the chunk whole; the chunk is not
// cached. Pieces the cache holds go through the same buffer without a copy,
// so the bytes keep their order.
//
// A read's GETs run on one thread of this pool, which blocks while the
// reader is behind: not the I/O pool's, where a slow reader would hold up
// chunk flushes and checkpoints.
#include <cstddef>
#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include <boost/asio/thread_pool.hpp>

#include "service/stream_service.h"
#include "storage/object_store.h"

namespace dstream::storage {
class byte_pipe;
}

namespace dstream::service {

// A cold piece of a streamed read, with its chunk when the cache held it.
struct streamed_piece {
    std::string object_key;
    std::uint64_t offset = 0;  // within the object
    std::uint64_t length = 0;
    std::shared_ptr<const std::string> cached;
};

class cold_read_pool {
public:
    // `threads`: reads under way at once; more wait for a thread.
    explicit cold_read_pool(std::size_t threads) : _threads(threads) {}
    ~cold_read_pool() { stop(); }
    cold_read_pool(const cold_read_pool&) = delete;
    cold_read_pool& operator=(const cold_read_pool&) = delete;

    // The stream of `pieces`, in order, from `store` (which outlives it).
    std::shared_ptr<cold_stream> open(storage::object_store& store,
                                      std::vector<streamed_piece> pieces);

    // Ends the reads under way (their readers' pipes refuse further bytes),
    // drops those not started and waits for the threads: a reader that will
    // never drain (the node stopped with its connection open) would hold
    // its thread for good.
    void stop();

private:
    class stream;  // the cold_stream open() makes

    // Runs `pieces` into `pipe` on a thread of the pool (the stream's first next()).
    void start(storage::object_store& store, std::vector<streamed_piece> pieces,
               std::shared_ptr<storage::byte_pipe> pipe);
    // Whether the pool still runs reads; then `pipe` counts as under way.
    bool enter(const std::shared_ptr<storage::byte_pipe>& pipe);
    void leave(const std::shared_ptr<storage::byte_pipe>& pipe);

    boost::asio::thread_pool _threads;
    std::mutex _mutex;
    bool _stopped = false;
    std::vector<std::shared_ptr<storage::byte_pipe>> _running;
};

}  // namespace dstream::service
