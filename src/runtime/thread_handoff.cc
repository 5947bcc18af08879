#include "runtime/thread_handoff.h"

#include <memory>
#include <vector>

#include "runtime/io_threads.h"

namespace dstream::runtime {
namespace {

// What one I/O thread has gathered for the others in its current pass.
struct outbox {
    struct batch {
        boost::asio::io_context* target;
        std::vector<handed_work> work;
    };

    boost::asio::io_context* own;
    std::vector<batch> batches;  // one per other thread
    bool flush_posted = false;

    batch* batch_for(const boost::asio::execution_context& target) {
        for (batch& b : batches) {
            if (b.target == &target) return &b;
        }
        return nullptr;  // its own, or none of the I/O threads'
    }

    void flush() {
        flush_posted = false;
        for (batch& b : batches) {
            if (b.work.empty()) continue;
            boost::asio::post(*b.target, [work = std::exchange(b.work, {})]() mutable {
                for (handed_work& w : work) w();
            });
        }
    }
};

thread_local outbox* current = nullptr;

}  // namespace

boost::asio::io_context* handoff_target(boost::asio::execution_context& context) {
    outbox::batch* b = current != nullptr ? current->batch_for(context) : nullptr;
    return b != nullptr ? b->target : nullptr;
}

void hand_off(boost::asio::io_context& target, handed_work work) {
    outbox::batch* b = current != nullptr ? current->batch_for(target) : nullptr;
    if (b == nullptr) {
        boost::asio::post(target, std::move(work));
        return;
    }
    b->work.push_back(std::move(work));
    if (!std::exchange(current->flush_posted, true)) {
        // Behind every handler queued now: the rest of this pass.
        boost::asio::post(*current->own, [] {
            if (current != nullptr) current->flush();
        });
    }
}

handoff_scope::handoff_scope(boost::asio::io_context& own, const io_contexts& all) {
    auto box = std::make_unique<outbox>();
    box->own = &own;
    for (std::size_t i = 0; i < all.size(); ++i) {
        if (&all.of(i) != &own) box->batches.push_back({&all.of(i), {}});
    }
    current = box.release();
}

handoff_scope::~handoff_scope() {
    delete current;
    current = nullptr;
}

}  // namespace dstream::runtime
