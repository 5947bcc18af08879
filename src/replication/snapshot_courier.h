#pragma once
// Raft snapshots between a cluster's nodes go by way of the object store every
// node of the cluster reads. A leader's InstallSnapshot leaves carrying a
// reference (key, length, BLAKE3-256) to its image, which it first puts in
// the store; a follower fetches the image a reference names, checks it, and
// hands its core the message as the leader's core wrote it. So a lagging or
// new replica's catch-up costs the peer link a few hundred bytes, and no
// message outgrows the transport's frame, whatever the checkpoint's size.
//
// To the cores it is a slow network: a message may arrive late or not at all
// (a put or a fetch that failed), and libraft sends the snapshot again after
// its install-snapshot timeout. Everything but InstallSnapshot passes as is.
// On the group's strand; the store's blocking calls run on the I/O pool.
#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>

#include <boost/asio/any_io_executor.hpp>

#include "replication/raft_metrics.h"
#include "replication/raft_replica.h"
#include "storage/object_store.h"

namespace dstream::replication {

// Where a group's replica puts the snapshots it sends: `prefix` is this
// node's and this group's alone (docs/disk-format.md, "Object keys").
struct snapshot_store {
    storage::object_store* store = nullptr;
    std::string prefix;
};

class snapshot_courier final : public raft_transport {
public:
    // `deliver` takes a message received from a peer, once its image arrived;
    // called on `strand`.
    using deliver_fn = std::function<void(std::string message)>;
    snapshot_courier(raft_transport& peers, std::uint32_t group, snapshot_store where,
                     boost::asio::any_io_executor io, boost::asio::any_io_executor strand,
                     deliver_fn deliver);

    // From the core: an InstallSnapshot waits for its image's put.
    void send(std::uint64_t to, std::string_view bytes) override;
    // Messages in pieces are AppendEntries (a long entry by reference): they
    // go as they are.
    void send_pieces(std::uint64_t to, std::span<const byte_slice> pieces) override {
        _peers.send_pieces(to, pieces);
    }
    // From a peer: true when the courier took the message (an InstallSnapshot
    // naming an image in the store) and delivers it later, or drops it;
    // false when the caller hands it to the core itself.
    bool intercept(std::string_view message);

private:
    struct sent_image {
        std::uint64_t index = 0;
        std::uint64_t term = 0;
        std::string reference;  // the data an InstallSnapshot carries instead of the image
    };
    void put(std::uint64_t index, std::uint64_t term, std::string image);
    void put_done(std::uint64_t index, std::uint64_t term, std::string key, std::string reference,
                  const status& st);
    void fetch(std::string message, std::string reference);

    raft_transport& _peers;
    std::uint32_t _group;
    snapshot_store _where;
    boost::asio::any_io_executor _io;
    boost::asio::any_io_executor _strand;
    raft_metrics::group_slot& _metrics;
    deliver_fn _deliver;

    std::optional<sent_image> _sent;            // the newest image in the store
    // Per peer: an InstallSnapshot waiting for a put, without its image.
    std::map<std::uint64_t, std::string> _held;
    bool _putting = false;
    bool _swept = false;          // a previous run's images of this prefix are gone
    std::deque<std::string> _kept;  // keys of the images put, oldest first
    bool _fetching = false;
};

}  // namespace dstream::replication
