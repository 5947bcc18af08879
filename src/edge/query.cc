#include "edge/query.h"

#include "edge/route.h"

namespace dstream::edge {

result<query_params> query_params::parse(std::string_view query) {
    query_params q;
    while (!query.empty()) {
        const auto amp = query.find('&');
        std::string_view pair = query.substr(0, amp);
        query = amp == std::string_view::npos ? std::string_view{} : query.substr(amp + 1);
        if (pair.empty()) continue;
        const auto eq = pair.find('=');
        auto name = percent_decode(pair.substr(0, eq), true);
        auto value = percent_decode(eq == std::string_view::npos ? std::string_view{} : pair.substr(eq + 1), true);
        if (!name || !value) {
            return make_error(protocol::error_code::invalid_query, "malformed query parameter");
        }
        q._params.emplace_back(std::move(*name), std::move(*value));
    }
    return q;
}

bool query_params::has(std::string_view name) const {
    for (const auto& [k, v] : _params) {
        if (k == name) return true;
    }
    return false;
}

result<std::optional<std::string>> query_params::single(std::string_view name) const {
    std::optional<std::string> found;
    for (const auto& [k, v] : _params) {
        if (k != name) continue;
        if (found) {
            return make_error(protocol::error_code::invalid_query,
                              "query parameter '" + std::string(name) + "' is repeated");
        }
        found = v;
    }
    return found;
}

}  // namespace dstream::edge
