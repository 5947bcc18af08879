#pragma once
// result<T>: a value or a protocol error, the return type of every protocol
// path (errors are values; exceptions are for bugs and start-up only).
#include <cassert>
#include <string>
#include <utility>
#include <variant>

#include "protocol/error_code.h"

namespace dstream {

// An error that travels from where it is decided to the edge, which renders it.
struct error {
    protocol::error_code code = protocol::error_code::internal;
    std::string message;  // informative detail; never echoes a body or names internals
};

template <typename T>
class [[nodiscard]] result {
public:
    result(T value) : _v(std::in_place_index<0>, std::move(value)) {}  // NOLINT(google-explicit-constructor)
    result(error e) : _v(std::in_place_index<1>, std::move(e)) {}      // NOLINT(google-explicit-constructor)

    bool ok() const { return _v.index() == 0; }
    explicit operator bool() const { return ok(); }

    T& value() & { assert(ok()); return std::get<0>(_v); }
    const T& value() const& { assert(ok()); return std::get<0>(_v); }
    T&& value() && { assert(ok()); return std::get<0>(std::move(_v)); }
    T* operator->() { return &value(); }
    const T* operator->() const { return &value(); }
    T& operator*() & { return value(); }
    const T& operator*() const& { return value(); }

    const error& err() const { assert(!ok()); return std::get<1>(_v); }

private:
    std::variant<T, error> _v;
};

struct ok_t {};
using status = result<ok_t>;
inline status ok_status() { return ok_t{}; }

inline error make_error(protocol::error_code code, std::string message) {
    return error{code, std::move(message)};
}

}  // namespace dstream
