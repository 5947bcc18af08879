#pragma once
// A strand executor one pointer wide. Asio's strand on an io_context is 24
// bytes: too big for the 16-byte buffer of any_io_executor, so every copy of
// a connection's executor into an awaitable handler, and every preference
// taken on it (blocking, outstanding work, at each asynchronous operation),
// allocated. This one points at a shared, counted strand, so it fits, and
// those copies only count references, as Asio's strand copies do.
//
// It supports what any_io_executor asks of an executor: execute, the context
// query, blocking.never / blocking.possibly, and outstanding_work.tracked /
// untracked (a tracked copy keeps the io_context's run() going, as a parked
// coroutine's handler must). The relationship preference is accepted and
// ignored, as preferences may be.
//
// On an io_context that one thread alone runs (runtime/io_threads.h marks
// its contexts so) that thread already serializes everything, and the
// strand's queue would only add a lock and a hop per handler: such a strand
// hands its handlers to the io_context's own executor. A handler it may run
// at once (blocking.possibly, what a completion dispatches) then runs inline
// on that thread, and a post still queues.
#include <atomic>
#include <cstddef>
#include <utility>

#include <boost/asio/execution.hpp>
#include <boost/asio/io_context.hpp>
#include <boost/asio/require.hpp>
#include <boost/asio/strand.hpp>

namespace dstream::runtime {

namespace detail {

// The mark of an io_context that one thread alone runs.
class one_thread_context : public boost::asio::execution_context::service {
public:
    using key_type = one_thread_context;
    static inline boost::asio::execution_context::id id;
    explicit one_thread_context(boost::asio::execution_context& owner)
        : boost::asio::execution_context::service(owner) {}

private:
    void shutdown() override {}
};

struct shared_strand {
    explicit shared_strand(boost::asio::io_context& io)
        : alone(boost::asio::has_service<one_thread_context>(io)),
          strand(boost::asio::make_strand(io)) {}
    std::atomic<std::size_t> references{1};
    const bool alone;
    boost::asio::strand<boost::asio::io_context::executor_type> strand;
};

}  // namespace detail

template <bool NeverBlocks, bool Tracked = false>
class basic_compact_strand {
public:
    explicit basic_compact_strand(boost::asio::io_context& io)
        : _shared(new detail::shared_strand(io)) {
        start_work();
    }
    basic_compact_strand(const basic_compact_strand& other) noexcept : _shared(other._shared) {
        acquire();
        start_work();
    }
    basic_compact_strand(basic_compact_strand&& other) noexcept
        : _shared(std::exchange(other._shared, nullptr)) {}
    basic_compact_strand& operator=(basic_compact_strand other) noexcept {
        // Copy and swap: the copy's reference (and work) become ours, and
        // ours leave with it.
        std::swap(_shared, other._shared);
        return *this;
    }
    ~basic_compact_strand() {
        finish_work();
        release();
    }

    template <typename Function>
    void execute(Function&& f) const {
        if (_shared->alone) {
            run(_shared->strand.get_inner_executor(), std::forward<Function>(f));
        } else {
            run(_shared->strand, std::forward<Function>(f));
        }
    }

    boost::asio::io_context& query(boost::asio::execution::context_t) const noexcept {
        return boost::asio::query(_shared->strand, boost::asio::execution::context);
    }
    static constexpr boost::asio::execution::blocking_t query(
        boost::asio::execution::blocking_t) noexcept {
        if constexpr (NeverBlocks) {
            return boost::asio::execution::blocking.never;
        } else {
            return boost::asio::execution::blocking.possibly;
        }
    }
    static constexpr boost::asio::execution::outstanding_work_t query(
        boost::asio::execution::outstanding_work_t) noexcept {
        if constexpr (Tracked) {
            return boost::asio::execution::outstanding_work.tracked;
        } else {
            return boost::asio::execution::outstanding_work.untracked;
        }
    }
    basic_compact_strand<true, Tracked> require(boost::asio::execution::blocking_t::never_t) const {
        return basic_compact_strand<true, Tracked>(_shared);
    }
    basic_compact_strand<false, Tracked> require(
        boost::asio::execution::blocking_t::possibly_t) const {
        return basic_compact_strand<false, Tracked>(_shared);
    }
    basic_compact_strand<NeverBlocks, true> require(
        boost::asio::execution::outstanding_work_t::tracked_t) const {
        return basic_compact_strand<NeverBlocks, true>(_shared);
    }
    basic_compact_strand<NeverBlocks, false> require(
        boost::asio::execution::outstanding_work_t::untracked_t) const {
        return basic_compact_strand<NeverBlocks, false>(_shared);
    }

    // True inside a function this strand runs (on a one-thread io_context:
    // any function its thread runs).
    bool running_in_this_thread() const noexcept {
        return _shared->alone ? _shared->strand.get_inner_executor().running_in_this_thread()
                              : _shared->strand.running_in_this_thread();
    }

    friend bool operator==(const basic_compact_strand& a, const basic_compact_strand& b) noexcept {
        return a._shared == b._shared;
    }
    friend bool operator!=(const basic_compact_strand& a, const basic_compact_strand& b) noexcept {
        return a._shared != b._shared;
    }

private:
    template <bool, bool>
    friend class basic_compact_strand;

    template <typename Executor, typename Function>
    static void run(const Executor& executor, Function&& f) {
        if constexpr (NeverBlocks) {
            boost::asio::execution::execute(
                boost::asio::require(executor, boost::asio::execution::blocking.never),
                std::forward<Function>(f));
        } else {
            boost::asio::execution::execute(executor, std::forward<Function>(f));
        }
    }

    explicit basic_compact_strand(detail::shared_strand* shared) noexcept : _shared(shared) {
        acquire();
        start_work();
    }
    void start_work() const noexcept {
        if constexpr (Tracked) {
            if (_shared) _shared->strand.get_inner_executor().on_work_started();
        }
    }
    void finish_work() const noexcept {
        if constexpr (Tracked) {
            if (_shared) _shared->strand.get_inner_executor().on_work_finished();
        }
    }
    void acquire() const noexcept {
        if (_shared) _shared->references.fetch_add(1, std::memory_order_relaxed);
    }
    void release() noexcept {
        if (_shared && _shared->references.fetch_sub(1, std::memory_order_acq_rel) == 1) {
            delete _shared;
        }
    }

    detail::shared_strand* _shared;
};

// A strand's executor as a connection uses it (a post never runs inline).
using compact_strand = basic_compact_strand<false>;

}  // namespace dstream::runtime
