#pragma once
// A message from a peer, read into memory the Raft core can keep: the
// entries of an AppendEntries stay where the socket put them
// (raft_core_receive_owned), so a long entry is not copied once more on the
// group's thread between the socket and the log.
#include <cstddef>
#include <memory>
#include <string_view>

namespace dstream::replication {

class received_message {
public:
    // `size` bytes, not initialized: the reads fill them.
    explicit received_message(std::size_t size);

    char* data() { return _data.get(); }
    std::size_t size() const { return _size; }
    std::string_view view() const { return {_data.get(), _size}; }
    // The memory, for the core to take over; the message is empty after.
    void* release() { return _data.release(); }

private:
    struct core_free {
        void operator()(char* p) const;
    };
    std::unique_ptr<char, core_free> _data;
    std::size_t _size = 0;
};

}  // namespace dstream::replication
