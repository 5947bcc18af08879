// extensions 4 / immutable-reads: {stream}/incarnation/{token}/chunk/{offset}.
// A chunk is the stream's bytes from the offset to the end of its 4 MiB grid
// cell or the tail; a response that can never change carries
// Stream-Immutable: true so a shared cache may keep it.
#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/read_common.h"
#include "edge/routing.h"
#include "edge/write_answer.h"
#include "protocol/digest.h"

namespace dstream::edge {
namespace {

// extensions 4.2: Ursula's chunk boundaries are the multiples of 4 MiB.
constexpr std::uint64_t chunk_grid = 4u << 20;

enum class ending : char { below_tail = 'b', open_tail = 'o', closed_tail = 'c' };

// A strong tag over the token, the range, where the answer ends, the content
// type and the body (extensions 4.1 note).
std::string chunk_etag(std::uint64_t token, std::uint64_t start, std::uint64_t end, ending how,
                       std::string_view content_type, const std::vector<byte_slice>& body) {
    std::string covered = std::to_string(token) + ":" + std::to_string(start) + ":" + std::to_string(end) +
                          ":" + static_cast<char>(how) + ":" + std::string(content_type) + ":";
    for (const auto& s : body) covered.append(s.data, s.size);
    return "\"" + protocol::to_hex(protocol::blake3_256(covered)).substr(0, 32) + "\"";
}


}  // namespace

boost::asio::awaitable<void> handle_immutable_chunk(exchange& ex, std::uint64_t token,
                                                    std::uint64_t offset) {
    service::read_request lookup;
    lookup.key = ex.target().key;
    lookup.start = protocol::read_start{protocol::read_start::kind::position, offset};
    lookup.max_bytes = (offset / chunk_grid + 1) * chunk_grid - offset;
    lookup.if_incarnation = token;  // after 404, 410 and 416, as the group checks
    const service::placement where = ex.placement();
    if (auto routed = route_elsewhere(ex, where, answered_by::replica)) {
        co_await ex.send(*routed);
        co_return;
    }
    service::stream_view view = co_await ex.service().read(lookup);
    const std::uint64_t grid_end = (offset / chunk_grid + 1) * chunk_grid;
    const auto ending_of = [](const service::stream_view& v) {
        return v.next < v.tail ? ending::below_tail
               : v.stream_closed ? ending::closed_tail
                                 : ending::open_tail;
    };
    // extensions 4.3: marked when it reaches its grid cell's end below the
    // tail, or ends at the tail of a closed stream; never at an open tail.
    const auto marks = [&](const service::stream_view& v) {
        const ending how = ending_of(v);
        return !v.refusal &&
               ((how == ending::below_tail && v.next == grid_end) || how == ending::closed_tail);
    };
    if (ex.options().cluster != nullptr && !marks(view)) {
        // immutable-reads 4.3 note: a chunk it cannot mark, and a refusal,
        // a replica answers only as of what the leader proved committed (the
        // leader by its confirmation round, a follower by a read index).
        lookup.linearizable = true;
        view = co_await ex.service().read(lookup);
    }
    if (view.refusal) {
        response res = render_read_refusal(ex, *view.refusal, view.incarnation);
        co_await ex.send(res);
        co_return;
    }
    const ending how = ending_of(view);
    const bool marked = marks(view);
    // Raw stored bytes: NDJSON for a JSON stream, on either surface.
    const std::string content_type = view.json ? "application/x-ndjson" : view.content_type;
    const std::string etag = chunk_etag(token, view.start, view.next, how, content_type, view.data);

    const bool not_modified = if_none_match_names(ex.req(), etag);
    response res = ex.make_response(not_modified ? http::status::not_modified : http::status::ok);
    res.set(http::field::content_type, content_type);
    res.set(hdr::stream_incarnation, std::to_string(view.incarnation));
    set_offset_header(res, hdr::stream_offset, view.start);
    set_offset_header(res, hdr::stream_next_offset, view.next);
    if (how == ending::closed_tail) res.set(hdr::stream_closed, "true");
    if (marked) res.set(hdr::stream_immutable, "true");
    res.set(http::field::etag, etag);
    res.set(http::field::cache_control, "no-store");
    if (not_modified) {
        co_await ex.send(res);
        co_return;
    }
    co_await ex.send_slices(res, view.data);
}

}  // namespace dstream::edge
