#pragma once
// Work one I/O thread hands to another, gathered per pass: what a thread
// hands over while it runs its queued handlers goes to each receiving
// thread as one post, once those handlers have run, and runs there in the
// order it was handed.
//
// Why: a group's thread answers the writes of connections owned by the
// other thread one by one as it applies them. Posted one by one, each answer
// reached its connection alone, and an HTTP/2 connection with eight writes in
// flight sent (and encrypted) its answers in three writes where one thread
// sent them in one. Gathered, the answers of one pass arrive together, and so
// do the writes a connection's thread submits to the other thread's groups.
//
// Only between the threads of runtime::io_threads: a thread that runs none
// of them (a WAL or cold-tier thread, a test's own loop) posts at once, and
// so does a thread handing work to itself.
#include <utility>

#include <boost/asio/associated_executor.hpp>
#include <boost/asio/dispatch.hpp>
#include <boost/asio/execution/context.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/post.hpp>
#include <boost/asio/query.hpp>

#include "base/unique_function.h"

namespace dstream::runtime {

class io_contexts;

using handed_work = unique_function<void()>;

// The io_context of another I/O thread that `context` is, when the calling
// thread is an I/O thread too (its work for it may be handed off); else null.
boost::asio::io_context* handoff_target(boost::asio::execution_context& context);

// Runs `work` on the thread that alone runs `target`, a handoff_target(),
// as a plain handler of it.
void hand_off(boost::asio::io_context& target, handed_work work);

// Posts `handler` to its associated executor (asio::post), gathered with the
// calling thread's other hand-offs when that executor runs on another I/O
// thread; there it runs at once if its executor allows (a strand alone on
// its thread does).
template <typename Handler>
void post_gathered(Handler&& handler) {
    auto executor = boost::asio::get_associated_executor(handler);
    boost::asio::execution_context& context =
        boost::asio::query(executor, boost::asio::execution::context);
    if (boost::asio::io_context* target = handoff_target(context)) {
        hand_off(*target, [h = std::forward<Handler>(handler)]() mutable {
            boost::asio::dispatch(std::move(h));
        });
    } else {
        boost::asio::post(std::forward<Handler>(handler));
    }
}

// While one exists on a thread, that thread runs `own`, one of `all`, and
// gathers what it hands to the others. What is still gathered when it goes
// (the thread's io_context stopped) is dropped with it, while the
// io_contexts still exist.
class handoff_scope {
public:
    handoff_scope(boost::asio::io_context& own, const io_contexts& all);
    ~handoff_scope();
    handoff_scope(const handoff_scope&) = delete;
    handoff_scope& operator=(const handoff_scope&) = delete;
};

}  // namespace dstream::runtime
