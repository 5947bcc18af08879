// The request head as the server reads it (edge/server.cc): the early look at
// the request line, Beast's parser with the server's limits, fed in two reads
// split where the input says, then what the dispatcher and the handlers parse
// out of a head: the target, its route and subresource, the query parameters
// and the protocol's headers.
#include <string>

#include <boost/asio/buffer.hpp>
#include <boost/beast/http/error.hpp>

#include "edge/byte_range.h"
#include "edge/headers.h"
#include "edge/query.h"
#include "edge/request_head.h"
#include "edge/route.h"
#include "edge/subresource.h"
#include "protocol/utf8.h"
#include "fuzz_check.h"
#include "protocol/content_type.h"
#include "protocol/decimal.h"
#include "protocol/expiry.h"
#include "protocol/offset.h"

namespace {

using namespace dstream;
using fuzz::check;
namespace http = boost::beast::http;

std::string_view view(boost::beast::string_view s) { return {s.data(), s.size()}; }

// Parses as the server's reads would: each read appends to what the parser
// has not consumed yet. False on a parse error.
bool parse_head(edge::request_parser& parser, std::string_view first, std::string_view second) {
    std::string pending;
    for (const std::string_view read : {first, second}) {
        pending.append(read);
        // Beast's reads never hand the parser an empty buffer (its pointer
        // would be null, which the parser does arithmetic on).
        while (!parser.is_header_done() && !pending.empty()) {
            boost::system::error_code ec;
            const std::size_t used = parser.put(boost::asio::buffer(pending), ec);
            pending.erase(0, used);
            if (ec == http::error::need_more) break;
            if (ec) return false;
        }
    }
    return true;
}

void parse_target(std::string_view target) {
    const edge::request_target parts = edge::split_request_target(target);
    check(parts.path.size() + parts.query.size() <= target.size(),
          "the target's parts are inside it");
    if (auto route = edge::resolve_route(parts.path)) {
        if (route->what == edge::route::kind::stream && route->where == edge::surface::bucketed) {
            check(route->key.size() <= edge::max_stream_key_bytes, "a bucketed key fits 122 bytes");
        }
        check(protocol::is_valid_utf8(route->key), "a routed key is UTF-8");
        if (route->what == edge::route::kind::stream_subresource) {
            auto sub = edge::parse_subresource(route->subresource);
            if (sub && sub->what == edge::subresource::kind::snapshot) {
                check(route->subresource.size() == 2 &&
                          route->subresource[1] == protocol::format_offset(sub->offset),
                      "a snapshot offset is the 20-digit form");
            }
            for (const auto& segment : route->subresource) {
                check(protocol::is_valid_utf8(segment), "a routed segment is UTF-8");
            }
        }
    }
    if (auto query = edge::query_params::parse(parts.query)) {
        for (const char* name :
             {"offset", "live", "cursor", "timeout_ms", "max_bytes", "consistency"}) {
            const auto value = query->single(name);
            check(!value || value->has_value() == query->has(name), "single() agrees with has()");
            if (value && *value && std::string_view(name) == "offset") {
                (void)protocol::parse_read_start(**value);
            }
        }
    }
}

void parse_headers(const edge::request& req, std::uint64_t body_size) {
    if (auto producer = edge::producer_headers(req); producer && *producer) {
        check(!(*producer)->id.empty(), "a producer has an id");
        check((*producer)->epoch <= protocol::max_producer_number &&
                  (*producer)->seq <= protocol::max_producer_number,
              "producer numbers are at most 2^53 - 1");
    }
    if (auto token = edge::incarnation_precondition(req); token && *token) {
        check(**token >= (std::uint64_t{1} << 52) && **token < (std::uint64_t{1} << 53),
              "an incarnation token is in [2^52, 2^53)");
    }
    (void)edge::stream_closed_requested(req);
    const auto header = [&](std::string_view name) { return edge::single_header(req, name); };
    if (auto type = header("Content-Type"); type && *type) {
        (void)protocol::is_valid_content_type(**type);
        (void)protocol::is_json_media_type(**type);
    }
    auto ttl = header(edge::hdr::stream_ttl);
    auto expires = header(edge::hdr::stream_expires_at);
    if (ttl && expires) (void)protocol::parse_expiry(*ttl, *expires);
    if (auto fork = header(edge::hdr::stream_fork_offset); fork && *fork) {
        (void)protocol::parse_fork_offset(**fork);
    }
    if (auto sub = header(edge::hdr::stream_fork_sub_offset); sub && *sub) {
        (void)protocol::parse_canonical_decimal(**sub, UINT64_MAX);
    }
    if (auto range = edge::parse_byte_range(view(req[http::field::range]))) {
        if (auto span = edge::resolve_byte_range(*range, body_size)) {
            check(span->length > 0 && span->first < body_size &&
                      span->length <= body_size - span->first,
                  "a resolved range lies inside the body");
        }
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    const std::string_view input = fuzz::as_text(data + 1, size - 1);
    const std::size_t split = input.empty() ? 0 : data[0] % (input.size() + 1);

    // The server's look at the head as it arrives, in the same two reads.
    edge::request_head_scan scan;
    auto early = edge::check_request_head(input.substr(0, split), scan);
    if (early == edge::request_head_check::incomplete)
        early = edge::check_request_head(input, scan);
    edge::request_parser parser;
    edge::prepare_head_parser(parser);
    const bool parsed = parse_head(parser, input.substr(0, split), input.substr(split));
    if (early == edge::request_head_check::complete) {
        check(!parsed || parser.is_header_done(),
              "Beast decides a head the early check found complete");
    }
    if (!parsed || !parser.is_header_done()) return 0;
    // What Beast accepts within the limit, the early check never refuses: it
    // only answers sooner what Beast would refuse or wait on forever.
    check(
        early == edge::request_head_check::complete || early == edge::request_head_check::too_large,
        "the early check passes every head Beast accepts");

    const edge::request& req = parser.get();
    parse_target(view(req.target()));
    parse_headers(req, input.size());
    return 0;
}
