// dstream::unique_function: move-only callables, small ones kept inline and
// large ones on the heap, each destroyed exactly once, whichever way they
// were moved.
#include "base/unique_function.h"

#include <array>
#include <memory>
#include <string>
#include <utility>

#include <gtest/gtest.h>

namespace dstream {
namespace {

// Counts the destructions of the live copies of a callable (moved-from ones
// do not count).
struct tracked {
    std::shared_ptr<int> destroyed;
    bool live = true;
    explicit tracked(std::shared_ptr<int> d) : destroyed(std::move(d)) {}
    tracked(tracked&& other) noexcept : destroyed(other.destroyed), live(other.live) {
        other.live = false;
    }
    tracked& operator=(tracked&&) = delete;
    ~tracked() {
        if (live) ++*destroyed;
    }
};

template <std::size_t Padding>
struct callable_of_size {
    tracked witness;
    std::array<char, Padding> padding{};
    int operator()(int x) const { return x + static_cast<int>(padding.size()); }
};

template <typename F>
void expect_called_moved_and_destroyed_once() {
    auto destroyed = std::make_shared<int>(0);
    {
        unique_function<int(int)> f(F{tracked(destroyed)});
        ASSERT_TRUE(f);
        unique_function<int(int)> g(std::move(f));
        EXPECT_FALSE(f);  // NOLINT(bugprone-use-after-move): moved-from is empty
        unique_function<int(int)> h;
        h = std::move(g);
        EXPECT_EQ(h(1), 1 + static_cast<int>(sizeof(F::padding)));
        EXPECT_EQ(*destroyed, 0);
    }
    EXPECT_EQ(*destroyed, 1);
}

TEST(UniqueFunction, ASmallCallableIsKeptInline) {
    static_assert(sizeof(callable_of_size<8>) <= unique_function<int(int)>::inline_bytes);
    expect_called_moved_and_destroyed_once<callable_of_size<8>>();
}

TEST(UniqueFunction, ALargeCallableIsKeptOnTheHeap) {
    static_assert(sizeof(callable_of_size<200>) > unique_function<int(int)>::inline_bytes);
    expect_called_moved_and_destroyed_once<callable_of_size<200>>();
}

TEST(UniqueFunction, AssigningOverAFunctionDestroysItsCallable) {
    auto first = std::make_shared<int>(0);
    auto second = std::make_shared<int>(0);
    unique_function<int(int)> f(callable_of_size<8>{tracked(first)});
    f = unique_function<int(int)>(callable_of_size<200>{tracked(second)});
    EXPECT_EQ(*first, 1);
    EXPECT_EQ(*second, 0);
    f = unique_function<int(int)>();
    EXPECT_EQ(*second, 1);
    EXPECT_FALSE(f);
}

TEST(UniqueFunction, MoveOnlyArgumentsAndResultsPassThrough) {
    unique_function<std::unique_ptr<std::string>(std::unique_ptr<std::string>)> f(
        [suffix = std::make_unique<std::string>("!")](std::unique_ptr<std::string> s) {
            *s += *suffix;
            return s;
        });
    EXPECT_EQ(*f(std::make_unique<std::string>("moved")), "moved!");
}

}  // namespace
}  // namespace dstream
