#pragma once
// The query component of a request: decoded parameters, repeats detected.
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/result.h"

namespace dstream::edge {

class query_params {
public:
    static result<query_params> parse(std::string_view query);

    bool empty() const { return _params.empty(); }
    bool has(std::string_view name) const;
    // The value of a parameter that may appear at most once; a repeat is a 400.
    result<std::optional<std::string>> single(std::string_view name) const;

private:
    std::vector<std::pair<std::string, std::string>> _params;
};

}  // namespace dstream::edge
