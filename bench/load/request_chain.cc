#include "request_chain.h"

#include <algorithm>
#include <atomic>
#include <memory>
#include <mutex>

#include <boost/asio/post.hpp>

namespace dstream::bench {
namespace {

constexpr std::size_t kMaxMessages = 5;

struct chain_cursor {
    std::unique_ptr<http_connection> conn;
    std::size_t item = 0;
    unsigned step = 0;
};

class chain_runner final : public exchange_handler {
public:
    chain_runner(worker_pool& pool, const target& t, std::size_t items, unsigned connections,
                 request_chain& chain)
        : items_(items), chain_(chain) {
        const auto n = static_cast<unsigned>(
            std::max<std::size_t>(1, std::min<std::size_t>(connections, items)));
        const std::vector<std::string> fields = chain.capture_fields();
        for (unsigned k = 0; k < n; ++k) {
            auto cur = std::make_unique<chain_cursor>();
            cur->conn = std::make_unique<http_connection>(pool.ioc(k), t, *this);
            cur->conn->tag = k;
            cur->conn->capture_fields = fields;
            cur->item = k;
            cursors_.push_back(std::move(cur));
        }
    }

    void start(worker_pool& pool) {
        for (std::size_t k = 0; k < cursors_.size(); ++k) {
            asio::post(pool.ioc(k), [this, k] { issue(*cursors_[k], nullptr); });
        }
    }

    void abort(worker_pool& pool, unsigned thread) {
        for (std::size_t k = thread; k < cursors_.size(); k += pool.size()) {
            cursors_[k]->conn->close();
        }
    }

    void on_response(http_connection& c, const response& r) override {
        chain_cursor& cur = *cursors_[c.tag];
        if (!r.ok()) {
            note_failure(c, r);
            next_item(cur);
            issue(cur, nullptr);
            return;
        }
        ++cur.step;
        issue(cur, &r);
    }

    std::uint64_t failures() const { return failures_; }
    const std::string& messages() const { return messages_; }

private:
    void next_item(chain_cursor& cur) {
        cur.item += cursors_.size();
        cur.step = 0;
    }

    // Sends the next step of the cursor's item, moving on to its next item
    // when the chain has ended; closes the connection when none is left.
    void issue(chain_cursor& cur, const response* previous) {
        while (cur.item < items_) {
            std::string& head = cur.conn->head();
            head.clear();
            std::string_view body;
            if (chain_.next(cur.item, cur.step, previous, head, body)) {
                cur.conn->send(body);
                return;
            }
            next_item(cur);
            previous = nullptr;
        }
        cur.conn->close();
    }

    void note_failure(http_connection& c, const response& r) {
        ++failures_;
        std::lock_guard lock(mu_);
        if (failures_ > kMaxMessages) return;
        // The request line without its protocol: "PUT /path".
        std::string_view line = c.head();
        line = line.substr(0, line.find('\r'));
        line = line.substr(0, line.rfind(' '));
        messages_ += "\n  " + std::string(line) + ": " + describe_failure(r);
    }

    const std::size_t items_;
    request_chain& chain_;
    std::vector<std::unique_ptr<chain_cursor>> cursors_;
    std::mutex mu_;
    std::atomic<std::uint64_t> failures_{0};
    std::string messages_;
};

}  // namespace

bool run_chains(worker_pool& pool, const target& t, std::size_t items, unsigned connections,
                request_chain& chain, std::chrono::seconds limit, std::string& error) {
    if (items == 0) return true;
    chain_runner runner(pool, t, items, connections, chain);
    runner.start(pool);
    const bool in_time = pool.run_to_completion(limit, [&](unsigned i) { runner.abort(pool, i); });
    if (!in_time) {
        error = "set-up of " + std::to_string(items) + " streams took more than " +
                std::to_string(limit.count()) + " s";
        return false;
    }
    if (runner.failures() > 0) {
        error = std::to_string(runner.failures()) + " set-up requests failed:" + runner.messages();
        return false;
    }
    return true;
}

}  // namespace dstream::bench
