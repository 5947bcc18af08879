#pragma once
// A map keyed by std::string that is searched with a std::string_view,
// without building a string for each lookup (a request's stream key).
#include <cstddef>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

namespace dstream {

struct string_hash {
    using is_transparent = void;
    std::size_t operator()(std::string_view s) const noexcept {
        return std::hash<std::string_view>{}(s);
    }
};

template <typename T>
using string_map = std::unordered_map<std::string, T, string_hash, std::equal_to<>>;

}  // namespace dstream
