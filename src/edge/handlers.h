#pragma once
// The route table's handlers: one per operation, each in its own file.
#include <utility>
#include <boost/asio/awaitable.hpp>

#include "edge/exchange.h"

namespace dstream::edge {

boost::asio::awaitable<void> handle_create(exchange& ex);   // PUT {stream}
boost::asio::awaitable<void> handle_append(exchange& ex);   // POST {stream}
boost::asio::awaitable<void> handle_delete(exchange& ex);   // DELETE {stream}
boost::asio::awaitable<void> handle_head(exchange& ex);     // HEAD {stream}
boost::asio::awaitable<void> handle_read(exchange& ex);     // GET {stream}: catch-up, long-poll
boost::asio::awaitable<void> handle_options(exchange& ex);  // CORS preflight
boost::asio::awaitable<void> handle_bucket(exchange& ex);   // PUT /{bucket_id}
boost::asio::awaitable<void> handle_operator(exchange& ex);  // /__ursula/health, ready, metrics
// {stream}/snapshot/{offset}: PUT publishes, GET and HEAD read (extensions 2.2, 2.5).
boost::asio::awaitable<void> handle_snapshot(exchange& ex, std::uint64_t offset);
// extensions 2.2, Upload in Parts: POST {stream}/snapshot/{offset}/parts,
// DELETE {stream}/snapshot/parts, and the commit, a PUT of
// {stream}/snapshot/{offset} with Stream-Snapshot-Parts.
boost::asio::awaitable<void> handle_part_upload(exchange& ex);
boost::asio::awaitable<void> handle_parts_discard(exchange& ex);
boost::asio::awaitable<void> handle_parts_commit(exchange& ex, std::uint64_t offset);
boost::asio::awaitable<void> handle_retention(exchange& ex, std::uint64_t offset);  // PUT
boost::asio::awaitable<void> handle_bootstrap(exchange& ex);                        // GET
// {stream}/incarnation/{token}/chunk/{offset} and .../snapshot/{offset} (extensions 4).
boost::asio::awaitable<void> handle_immutable_chunk(exchange& ex, std::uint64_t token,
                                                    std::uint64_t offset);
boost::asio::awaitable<void> handle_immutable_snapshot(exchange& ex, std::uint64_t token,
                                                       std::uint64_t offset);

}  // namespace dstream::edge
