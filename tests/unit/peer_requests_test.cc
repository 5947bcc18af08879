// The node channel's requests and answers (service/peer_requests.h): every
// field survives a round trip, and a truncated or altered message decodes to
// nothing.
#include "service/peer_requests.h"

#include <gtest/gtest.h>

namespace dstream::service {
namespace {

TEST(PeerRequests, ARequestAndAnAnswerReadBackAsWritten) {
    peer_request q;
    q.what = peer_request::kind::read_source;
    q.id = 7;
    q.from = 3;
    q.group = 12;
    q.key = "bucket/source";
    q.incarnation = 99;
    q.start = 4096;
    q.max_bytes = 1u << 20;
    const peer_message m = decode_peer_message(encode(q));
    ASSERT_TRUE(m.request.has_value());
    EXPECT_FALSE(m.answer.has_value());
    EXPECT_EQ(m.request->what, q.what);
    EXPECT_EQ(m.request->id, 7u);
    EXPECT_EQ(m.request->from, 3u);
    EXPECT_EQ(m.request->group, 12u);
    EXPECT_EQ(m.request->key, q.key);
    EXPECT_EQ(m.request->incarnation, 99u);
    EXPECT_EQ(m.request->start, 4096u);
    EXPECT_EQ(m.request->max_bytes, q.max_bytes);

    peer_answer a;
    a.id = 7;
    a.refusal = make_error(protocol::error_code::stream_gone, "gone");
    a.source = fork_source_view{5, "application/json", true, {3600, 1700000000000}, 42};
    a.next = 10;
    a.tail = 42;
    a.bytes = std::string("a\0b", 3);
    const peer_message back = decode_peer_message(encode(a));
    ASSERT_TRUE(back.answer.has_value());
    EXPECT_EQ(back.answer->id, 7u);
    ASSERT_TRUE(back.answer->refusal.has_value());
    EXPECT_EQ(back.answer->refusal->code, protocol::error_code::stream_gone);
    EXPECT_EQ(back.answer->refusal->message, "gone");
    EXPECT_EQ(back.answer->source.incarnation, 5u);
    EXPECT_EQ(back.answer->source.content_type, "application/json");
    EXPECT_TRUE(back.answer->source.json);
    EXPECT_EQ(back.answer->source.expiry, a.source.expiry);
    EXPECT_EQ(back.answer->source.tail, 42u);
    EXPECT_EQ(back.answer->next, 10u);
    EXPECT_EQ(back.answer->tail, 42u);
    EXPECT_EQ(back.answer->bytes, a.bytes);
}

TEST(PeerRequests, ATruncatedOrAlteredMessageDecodesToNothing) {
    peer_request q;
    q.what = peer_request::kind::propose;
    q.command = "encoded";
    const std::string bytes = encode(q);
    for (std::size_t n = 0; n < bytes.size(); ++n) {
        const peer_message m = decode_peer_message(bytes.substr(0, n));
        EXPECT_FALSE(m.request || m.answer) << "a prefix of " << n << " bytes";
    }
    std::string wrong_kind = bytes;
    wrong_kind[1] = 9;
    EXPECT_FALSE(decode_peer_message(wrong_kind).request.has_value());
    EXPECT_FALSE(decode_peer_message(bytes + "x").request.has_value());
}

}  // namespace
}  // namespace dstream::service
