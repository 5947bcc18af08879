// extensions 2.2, Upload in Parts: stage a part, discard the staged parts,
// commit them as a snapshot.
#include "edge/handlers.h"
#include "edge/headers.h"
#include "edge/write_answer.h"
#include "protocol/content_type.h"
#include "protocol/snapshot_parts.h"

namespace dstream::edge {
namespace {

using protocol::error_code;

// Every shape fault of a commit is refused here, before a part is looked at.
result<service::parts_commit> parse_commit(const exchange& ex, std::uint64_t offset) {
    const request& req = ex.req();
    service::parts_commit commit;
    commit.key = ex.target().key;
    commit.offset = offset;
    auto incarnation = incarnation_precondition(req);
    if (!incarnation) return incarnation.err();
    commit.if_incarnation = *incarnation;
    auto content_type = single_header(req, "Content-Type");
    if (!content_type) return content_type.err();
    commit.content_type =
        *content_type ? std::string(**content_type) : std::string(protocol::default_content_type);
    auto count_header = single_header(req, hdr::stream_snapshot_parts);
    if (!count_header) return count_header.err();
    auto count = protocol::parse_parts_count(count_header->value_or(""));
    if (!count) return count.err();
    auto digest_header = single_header(req, hdr::stream_snapshot_digest);
    if (!digest_header) return digest_header.err();
    auto digest = protocol::parse_body_digest(digest_header->value_or(""));
    if (!digest) {
        return make_error(error_code::invalid_parts_commit,
                          "a commit needs Stream-Snapshot-Digest: 64 lowercase hexadecimal digits");
    }
    commit.digest = *digest;
    auto ids = protocol::parse_parts_list(req.body(), *count);
    if (!ids) return ids.err();
    commit.part_ids = std::move(*ids);
    return commit;
}

}  // namespace

boost::asio::awaitable<void> handle_part_upload(exchange& ex) {
    auto incarnation = incarnation_precondition(ex.req());
    if (!incarnation) {
        response res = ex.make_error(incarnation.err());
        co_await ex.send(res);
        co_return;
    }
    std::unique_ptr<service::part_upload> upload = ex.take_part_upload();
    const service::parts_answer answer =
        co_await ex.service().stage_part(ex.target().key, *incarnation, ex.req().body(), upload);
    response res = render_parts_answer(ex, answer, http::status::created);
    co_await ex.send(res);
}

boost::asio::awaitable<void> handle_parts_discard(exchange& ex) {
    auto incarnation = incarnation_precondition(ex.req());
    if (!incarnation) {
        response res = ex.make_error(incarnation.err());
        co_await ex.send(res);
        co_return;
    }
    const service::parts_answer answer =
        co_await ex.service().discard_parts(ex.target().key, *incarnation);
    response res = render_parts_answer(ex, answer, http::status::no_content);
    co_await ex.send(res);
}

boost::asio::awaitable<void> handle_parts_commit(exchange& ex, std::uint64_t offset) {
    auto commit = parse_commit(ex, offset);
    if (!commit) {
        response res = ex.make_error(commit.err());
        co_await ex.send(res);
        co_return;
    }
    const state::apply_result r = co_await ex.service().commit_parts(*commit);
    response res = render_publish_answer(ex, r);
    if (r.refusal && r.refusal->code == error_code::snapshot_too_large) {
        // extensions 10: a size refusal names the limit it applied.
        if (auto limit = ex.service().max_snapshot_bytes()) {
            res.set(hdr::ursula_max_snapshot_bytes, std::to_string(*limit));
        }
    }
    co_await ex.send(res);
}

}  // namespace dstream::edge
