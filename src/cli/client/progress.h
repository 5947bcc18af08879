#pragma once
// A one-line progress meter for long transfers, on stderr and only when
// stderr is a terminal, so pipes and logs never see it.
#include <chrono>
#include <cstdint>
#include <string>

namespace dstream::cli::client {

class progress {
public:
    // `total` 0: unknown.
    progress(std::string label, std::uint64_t total);
    ~progress();
    progress(const progress&) = delete;
    progress& operator=(const progress&) = delete;

    void update(std::uint64_t done);

private:
    bool _enabled;
    bool _drawn = false;
    std::string _label;
    std::uint64_t _total;
    std::chrono::steady_clock::time_point _last{};
};

}  // namespace dstream::cli::client
