#include "replication/snapshot_courier.h"

#include <cstdlib>
#include <memory>

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <spdlog/spdlog.h>

#include "base/binary.h"
#include "protocol/digest.h"
#include "replication/raft/raft_core.h"

namespace dstream::replication {
namespace {

// A reference is told from a checkpoint image ("DSTRSNP1"...) by its magic.
constexpr std::string_view reference_magic = "DSTRREF1";
// The newest images a node keeps per group: a follower may still be
// fetching the one before the newest.
constexpr std::size_t images_kept = 2;

struct image_reference {
    std::string key;
    std::uint64_t size = 0;
    protocol::body_digest digest{};
};

std::string encode_reference(const image_reference& r) {
    binary_writer w;
    for (const char c : reference_magic) w.put_u8(static_cast<std::uint8_t>(c));
    w.put_string(r.key);
    w.put_u64(r.size);
    for (const std::uint8_t b : r.digest) w.put_u8(b);
    return std::move(w).take();
}

std::optional<image_reference> decode_reference(std::string_view data) {
    if (!data.starts_with(reference_magic)) return std::nullopt;
    binary_reader r(data.substr(reference_magic.size()));
    image_reference out;
    if (!r.get_string(out.key) || !r.get_u64(out.size)) return std::nullopt;
    for (std::uint8_t& b : out.digest) {
        if (!r.get_u8(b)) return std::nullopt;
    }
    if (!r.at_end()) return std::nullopt;
    return out;
}

struct snapshot_message {
    std::uint64_t index = 0;
    std::uint64_t term = 0;
    std::string_view data;  // the message's last bytes
};

std::optional<snapshot_message> as_snapshot_message(std::string_view bytes) {
    snapshot_message m;
    std::size_t data_len = 0;
    if (raft_core_snapshot_message(bytes.data(), bytes.size(), &m.index, &m.term, &data_len) !=
        RAFT_CORE_OK) {
        return std::nullopt;
    }
    m.data = bytes.substr(bytes.size() - data_len);
    return m;
}

std::optional<std::string> with_data(std::string_view message, std::string_view data) {
    void* out = nullptr;
    std::size_t out_len = 0;
    if (raft_core_snapshot_message_with(message.data(), message.size(), data.data(), data.size(),
                                        &out, &out_len) != RAFT_CORE_OK) {
        return std::nullopt;
    }
    std::unique_ptr<void, decltype(&std::free)> owned(out, &std::free);
    return std::string(static_cast<const char*>(out), out_len);
}

}  // namespace

snapshot_courier::snapshot_courier(raft_transport& peers, std::uint32_t group,
                                   snapshot_store where, boost::asio::any_io_executor io,
                                   boost::asio::any_io_executor strand, deliver_fn deliver)
    : _peers(peers),
      _group(group),
      _where(std::move(where)),
      _io(std::move(io)),
      _strand(std::move(strand)),
      _metrics(raft_metrics::get().of(group)),
      _deliver(std::move(deliver)) {}

void snapshot_courier::send(std::uint64_t to, std::string_view bytes) {
    const auto snapshot = as_snapshot_message(bytes);
    if (!snapshot) {
        _peers.send(to, bytes);
        return;
    }
    if (_sent && _sent->index == snapshot->index && _sent->term == snapshot->term) {
        if (auto out = with_data(bytes, _sent->reference)) _peers.send(to, *out);
        return;
    }
    // Held without its image, which the put carries: one copy of it however
    // many peers wait.
    if (auto stripped = with_data(bytes, {})) _held[to] = std::move(*stripped);
    if (!_putting) put(snapshot->index, snapshot->term, std::string(snapshot->data));
}

void snapshot_courier::put(std::uint64_t index, std::uint64_t term, std::string image) {
    _putting = true;
    boost::asio::post(_io, [this, index, term, image = std::move(image), sweep = !_swept] {
        image_reference ref;
        ref.key = fmt::format("{}{:020}-{}", _where.prefix, index, term);
        ref.size = image.size();
        ref.digest = protocol::blake3_256(image);
        if (sweep) {
            // A previous run's images: no reference to them is current.
            if (auto listed = _where.store->list(_where.prefix)) {
                for (const auto& e : *listed) {
                    if (e.key != ref.key) (void)_where.store->remove(e.key);
                }
            }
        }
        const status st = _where.store->put(ref.key, image);
        boost::asio::post(_strand, [this, index, term, key = ref.key,
                                    reference = encode_reference(ref), st]() mutable {
            put_done(index, term, std::move(key), std::move(reference), st);
        });
    });
}

void snapshot_courier::put_done(std::uint64_t index, std::uint64_t term, std::string key,
                                std::string reference, const status& st) {
    _putting = false;
    auto held = std::exchange(_held, {});
    if (!st) {
        // The held messages go: libraft sends the snapshot again after its
        // install-snapshot timeout, which is the retry's backoff.
        _metrics.snapshot_failures.fetch_add(1, std::memory_order_relaxed);
        spdlog::warn("raft group {}: cannot put the image of its snapshot at {} in the object "
                     "store ({}); it goes again at the next try",
                     _group, index, st.err().message);
        return;
    }
    _swept = true;
    _metrics.snapshots_sent.fetch_add(1, std::memory_order_relaxed);
    spdlog::info("raft group {}: the snapshot at {} (term {}) goes to followers as {}", _group,
                 index, term, key);
    _sent = sent_image{index, term, std::move(reference)};
    _kept.push_back(std::move(key));
    while (_kept.size() > images_kept) {
        boost::asio::post(_io, [store = _where.store, old = std::move(_kept.front())] {
            (void)store->remove(old);
        });
        _kept.pop_front();
    }
    for (auto& [to, message] : held) {
        const auto snapshot = as_snapshot_message(message);
        // One for an older snapshot goes: the core sends the newest again.
        if (!snapshot || snapshot->index != index || snapshot->term != term) continue;
        if (auto out = with_data(message, _sent->reference)) _peers.send(to, *out);
    }
}

bool snapshot_courier::intercept(std::string_view message) {
    const auto snapshot = as_snapshot_message(message);
    if (!snapshot || !snapshot->data.starts_with(reference_magic)) return false;
    // One fetch at a time: a leader that sends again while one runs sends
    // the same snapshot, or a newer one it sends again later.
    if (!_fetching) fetch(std::string(message), std::string(snapshot->data));
    return true;
}

void snapshot_courier::fetch(std::string message, std::string reference) {
    _fetching = true;
    boost::asio::post(_io, [this, message = std::move(message),
                            reference = std::move(reference)]() mutable {
        std::string image;
        std::optional<std::string> whole;
        std::string why;
        if (const auto ref = decode_reference(reference); !ref) {
            why = "a malformed reference";
        } else if (const status got = _where.store->get(ref->key, 0, ref->size, image); !got) {
            why = fmt::format("{}: {}", ref->key, got.err().message);
        } else if (image.size() != ref->size || protocol::blake3_256(image) != ref->digest) {
            why = fmt::format("{}: its bytes are not the ones the leader put", ref->key);
        } else {
            whole = with_data(message, image);
            if (!whole) why = "the message cannot carry the image";
        }
        boost::asio::post(_strand, [this, whole = std::move(whole), why = std::move(why)]() mutable {
            _fetching = false;
            if (!whole) {
                _metrics.snapshot_failures.fetch_add(1, std::memory_order_relaxed);
                spdlog::warn("raft group {}: the leader's snapshot cannot be fetched ({}); the "
                             "leader sends it again",
                             _group, why);
                return;
            }
            _metrics.snapshots_fetched.fetch_add(1, std::memory_order_relaxed);
            spdlog::info("raft group {}: fetched the leader's snapshot", _group);
            _deliver(std::move(*whole));
        });
    });
}

}  // namespace dstream::replication
