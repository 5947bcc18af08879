#pragma once
// A move-only type-erased callable: completion handlers (which are move-only)
// are stored in queues of pending work. std::move_only_function is C++23.
#include <memory>
#include <utility>

namespace dstream {

template <typename Signature>
class unique_function;

template <typename R, typename... Args>
class unique_function<R(Args...)> {
public:
    unique_function() = default;
    template <typename F>
    unique_function(F f)  // NOLINT(google-explicit-constructor)
        : _impl(std::make_unique<model<F>>(std::move(f))) {}

    explicit operator bool() const { return _impl != nullptr; }
    R operator()(Args... args) { return _impl->call(std::forward<Args>(args)...); }

private:
    struct concept_t {
        virtual ~concept_t() = default;
        virtual R call(Args... args) = 0;
    };
    template <typename F>
    struct model final : concept_t {
        explicit model(F f) : fn(std::move(f)) {}
        R call(Args... args) override { return fn(std::forward<Args>(args)...); }
        F fn;
    };
    std::unique_ptr<concept_t> _impl;
};

}  // namespace dstream
