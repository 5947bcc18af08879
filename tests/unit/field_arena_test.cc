// edge::field_arena: a connection's header fields come from its block, the
// block starts over once they are all gone, and what does not fit (or comes
// while something is still held) is taken from the heap, never handed out
// twice.
#include "edge/field_arena.h"

#include <string_view>

#include <boost/beast/http/parser.hpp>
#include <gtest/gtest.h>

#include "edge/message.h"
#include "edge/request_head.h"

namespace dstream::edge {
namespace {

constexpr std::string_view append_head =
    "POST /v1/stream/s HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\n"
    "Content-Length: 3\r\n\r\nabc";

request_parser parser_on(field_arena& arena) {
    return request_parser(std::piecewise_construct, std::make_tuple(),
                          std::make_tuple(field_allocator<char>(&arena)));
}

void parse_append_head(request_parser& parser) {
    parser.eager(true);
    boost::system::error_code ec;
    parser.put(boost::asio::buffer(append_head.data(), append_head.size()), ec);
    ASSERT_FALSE(ec) << ec.message();
    ASSERT_TRUE(parser.is_done());
}

TEST(FieldArena, ARequestAndItsAnswerTakeTheirFieldsFromTheBlock) {
    field_arena arena;
    {
        request_parser parser = parser_on(arena);
        parse_append_head(parser);
        const request& req = parser.get();
        int request_fields = 0;
        for (const auto& field : req) {
            EXPECT_TRUE(arena.holds(field.name_string().data())) << field.name_string();
            ++request_fields;
        }
        EXPECT_EQ(request_fields, 3);

        response res = response_to(req, http::status::no_content);
        res.set("Stream-Next-Offset", "00000000000000000003");
        res.set("Stream-Incarnation", "1");
        EXPECT_EQ(res.version(), 11);
        for (const auto& field : res) {
            EXPECT_TRUE(arena.holds(field.value().data())) << field.name_string();
        }
        EXPECT_GT(arena.used(), 0u);
    }
    EXPECT_EQ(arena.used(), 0u) << "all given back: the next request starts over";
    EXPECT_FALSE(arena.holds_block()) << "an idle connection holds no block";
}

TEST(FieldArena, TheBlockStartsOverOnlyWhenNothingInItIsHeld) {
    field_arena arena;
    EXPECT_FALSE(arena.holds_block());
    void* first = arena.allocate(100);
    void* second = arena.allocate(100);
    EXPECT_TRUE(arena.holds(first));
    EXPECT_TRUE(arena.holds(second));
    EXPECT_NE(first, second);
    arena.deallocate(first);
    void* third = arena.allocate(100);
    EXPECT_NE(third, first) << "the block is still in use: no address is handed out twice";
    EXPECT_NE(third, second);
    arena.deallocate(second);
    arena.deallocate(third);
    EXPECT_EQ(arena.used(), 0u);
    EXPECT_FALSE(arena.holds_block()) << "empty again: the block goes back";
    void* again = arena.allocate(100);
    EXPECT_TRUE(arena.holds(again)) << "and the next allocation takes one again";
    EXPECT_EQ(arena.used(), 112u) << "from its start";
    arena.deallocate(again);
}

TEST(FieldArena, WhatDoesNotFitComesFromTheHeap) {
    field_arena arena;
    void* big = arena.allocate(64 * 1024);
    EXPECT_FALSE(arena.holds(big));
    EXPECT_FALSE(arena.holds_block()) << "a block is taken only to be used";
    void* small = arena.allocate(16);
    EXPECT_TRUE(arena.holds(small));
    arena.deallocate(big);
    EXPECT_GT(arena.used(), 0u) << "a heap allocation given back does not count for the block";
    arena.deallocate(small);
    EXPECT_EQ(arena.used(), 0u);
}

TEST(FieldArena, AnAnswerWithoutAConnectionUsesTheHeap) {
    request req;  // no arena, as for an answer to an unparseable head
    req.version(11);
    response res = response_to(req, http::status::bad_request);
    res.set("Content-Type", "application/json");
    EXPECT_EQ(res.get_allocator().arena(), nullptr);
    EXPECT_EQ(res[http::field::content_type], "application/json");
}

TEST(FieldArena, FieldsMovedAndCopiedGoBackToTheirArena) {
    field_arena arena;
    {
        request_parser parser = parser_on(arena);
        parse_append_head(parser);
        response res = response_to(parser.get(), http::status::ok);
        res.set("Stream-Incarnation", "7");
        response moved = std::move(res);
        response copied = moved;
        response assigned = response_to(parser.get(), http::status::created);
        assigned = copied;
        EXPECT_EQ(assigned["Stream-Incarnation"], "7");
        EXPECT_EQ(assigned.result(), http::status::ok);
    }
    EXPECT_EQ(arena.used(), 0u);
}

}  // namespace
}  // namespace dstream::edge
