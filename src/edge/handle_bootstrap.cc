// extensions 3: GET {stream}/bootstrap, the snapshot and the retained updates
// after it in one multipart/mixed answer.
#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/routing.h"
#include "edge/write_answer.h"

namespace dstream::edge {
namespace {

// A fresh 128-bit random boundary for every answer (extensions 3.2).
std::string random_boundary(runtime::random_source& random) {
    static constexpr char hex[] = "0123456789abcdef";
    std::string out = "dstream-";
    for (int word = 0; word < 2; ++word) {
        const std::uint64_t v = random.next();
        for (int shift = 60; shift >= 0; shift -= 4) out.push_back(hex[(v >> shift) & 0xf]);
    }
    return out;
}

// One part: its head, then its body as slices (no copy of the bytes).
void add_part(std::vector<byte_slice>& out, std::vector<std::shared_ptr<std::string>>& owned,
              const std::string& boundary, std::string_view content_type,
              std::vector<byte_slice> body) {
    auto head = std::make_shared<std::string>("--" + boundary + "\r\nContent-Type: " +
                                              std::string(content_type) + "\r\n\r\n");
    owned.push_back(head);
    out.push_back(byte_slice{head, head->data(), head->size()});
    for (auto& s : body) out.push_back(std::move(s));
    static const std::string crlf = "\r\n";
    out.push_back(byte_slice{nullptr, crlf.data(), crlf.size()});
}

}  // namespace

boost::asio::awaitable<void> handle_bootstrap(exchange& ex) {
    if (!ex.query().empty()) {
        response res = ex.make_error(make_error(protocol::error_code::query_not_accepted,
                                                "/bootstrap takes no query parameters"));
        co_await ex.send(res);
        co_return;
    }
    auto incarnation = incarnation_precondition(ex.req());
    if (!incarnation) {
        response res = ex.make_error(incarnation.err());
        co_await ex.send(res);
        co_return;
    }
    if (auto routed = route_elsewhere(ex, ex.placement(), answered_by::leader)) {
        co_await ex.send(*routed);
        co_return;
    }
    service::bootstrap_view view = co_await ex.service().bootstrap(ex.target().key, ex.options().max_read_bytes);
    if (!view.refusal && *incarnation && **incarnation != view.incarnation) {
        view.refusal = make_error(protocol::error_code::incarnation_mismatch,
                                  "Stream-Incarnation does not match the stream");
    }
    if (view.refusal) {
        response res = render_read_refusal(ex, *view.refusal, view.incarnation);
        co_await ex.send(res);
        co_return;
    }
    const std::string boundary = random_boundary(*ex.options().random);
    std::vector<byte_slice> body;
    std::vector<std::shared_ptr<std::string>> owned;
    if (view.has_snapshot) {
        add_part(body, owned, boundary, view.snapshot.content_type, std::move(view.snapshot.body));
    } else {
        add_part(body, owned, boundary, "application/octet-stream", {});
    }
    if (view.json) {
        // One part per message: each stored message with its LF.
        std::string joined;
        for (const auto& s : view.updates) joined.append(s.data, s.size);
        auto all = std::make_shared<std::string>(std::move(joined));
        owned.push_back(all);
        std::size_t at = 0;
        while (at < all->size()) {
            const std::size_t lf = all->find('\n', at);
            const std::size_t end = lf == std::string::npos ? all->size() : lf + 1;
            add_part(body, owned, boundary, view.content_type,
                     {byte_slice{all, all->data() + at, end - at}});
            at = end;
        }
    } else if (!view.updates.empty()) {
        add_part(body, owned, boundary, view.content_type, std::move(view.updates));
    }
    auto closing = std::make_shared<std::string>("--" + boundary + "--\r\n");
    owned.push_back(closing);
    body.push_back(byte_slice{closing, closing->data(), closing->size()});

    response res = ex.make_response(http::status::ok);
    res.set(http::field::content_type, "multipart/mixed; boundary=" + boundary);
    res.set(http::field::cache_control, "no-store");
    res.set(hdr::stream_incarnation, std::to_string(view.incarnation));
    if (view.has_snapshot) {
        set_offset_header(res, hdr::stream_snapshot_offset, view.snapshot.offset);
    } else {
        res.set(hdr::stream_snapshot_offset, "-1");
    }
    set_offset_header(res, hdr::stream_next_offset, view.next);
    if (view.next == view.tail) res.set(hdr::stream_up_to_date, "true");
    co_await ex.send_slices(res, body);
}

}  // namespace dstream::edge
