#pragma once
// A move-only type-erased callable: completion handlers (which are move-only)
// are stored in queues of pending work. std::move_only_function is C++23.
//
// A callable of up to inline_bytes that moves without throwing is kept in
// the object itself: an append's completions (a coroutine's handler of 64
// bytes, a slot's deliverer) are that small, and each used to be a heap
// allocation. Larger ones go to the heap.
#include <array>
#include <cstddef>
#include <new>
#include <type_traits>
#include <utility>

namespace dstream {

template <typename Signature>
class unique_function;

template <typename R, typename... Args>
class unique_function<R(Args...)> {
public:
    static constexpr std::size_t inline_bytes = 64;

    unique_function() = default;
    template <typename F,
              typename = std::enable_if_t<!std::is_same_v<std::decay_t<F>, unique_function>>>
    unique_function(F f) {  // NOLINT(google-explicit-constructor)
        if constexpr (fits_inline<F>) {
            ::new (static_cast<void*>(_storage.data())) F(std::move(f));
        } else {
            ::new (static_cast<void*>(_storage.data())) F*(new F(std::move(f)));
        }
        _ops = &ops_for<F>;
    }
    unique_function(unique_function&& other) noexcept { take(other); }
    unique_function& operator=(unique_function&& other) noexcept {
        if (this != &other) {
            reset();
            take(other);
        }
        return *this;
    }
    unique_function(const unique_function&) = delete;
    unique_function& operator=(const unique_function&) = delete;
    ~unique_function() { reset(); }

    explicit operator bool() const { return _ops != nullptr; }
    R operator()(Args... args) { return _ops->call(_storage.data(), std::forward<Args>(args)...); }

    // Whether a callable of type F is kept without a heap allocation.
    template <typename F>
    static constexpr bool fits_inline =
        sizeof(F) <= inline_bytes &&
        alignof(F) <= alignof(std::max_align_t) && std::is_nothrow_move_constructible_v<F>;

private:
    // What a stored callable needs done, without a virtual table in it.
    struct operations {
        R (*call)(void* storage, Args&&... args);
        // Moves the callable from one storage to the other (empty) one.
        void (*move)(void* from, void* to) noexcept;
        void (*destroy)(void* storage) noexcept;
    };

    template <typename F>
    static F& callable(void* storage) {
        if constexpr (fits_inline<F>) {
            return *std::launder(static_cast<F*>(storage));
        } else {
            return **std::launder(static_cast<F**>(storage));
        }
    }

    template <typename F>
    static constexpr operations ops_for{
        [](void* storage, Args&&... args) -> R {
            return callable<F>(storage)(std::forward<Args>(args)...);
        },
        [](void* from, void* to) noexcept {
            if constexpr (fits_inline<F>) {
                ::new (to) F(std::move(callable<F>(from)));
                callable<F>(from).~F();
            } else {
                ::new (to) F*(*std::launder(static_cast<F**>(from)));
            }
        },
        [](void* storage) noexcept {
            if constexpr (fits_inline<F>) {
                callable<F>(storage).~F();
            } else {
                delete *std::launder(static_cast<F**>(storage));
            }
        },
    };

    void take(unique_function& other) noexcept {
        if (other._ops == nullptr) return;
        other._ops->move(other._storage.data(), _storage.data());
        _ops = std::exchange(other._ops, nullptr);
    }
    void reset() noexcept {
        if (_ops != nullptr) std::exchange(_ops, nullptr)->destroy(_storage.data());
    }

    alignas(std::max_align_t) std::array<std::byte, inline_bytes> _storage;
    const operations* _ops = nullptr;
};

}  // namespace dstream
