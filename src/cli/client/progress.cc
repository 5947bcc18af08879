#include "cli/client/progress.h"

#include <cstdio>
#include <unistd.h>

#include <fmt/format.h>

namespace dstream::cli::client {
namespace {

constexpr auto redraw_interval = std::chrono::milliseconds(200);

std::string mebibytes(std::uint64_t n) {
    return fmt::format("{:.1f} MiB", static_cast<double>(n) / (1 << 20));
}

}  // namespace

progress::progress(std::string label, std::uint64_t total)
    : _enabled(::isatty(STDERR_FILENO) == 1), _label(std::move(label)), _total(total) {}

progress::~progress() {
    // Leave the terminal line clean for whatever is printed next.
    if (_drawn) fmt::print(stderr, "\r\033[K");
}

void progress::update(std::uint64_t done) {
    if (!_enabled) return;
    const auto now = std::chrono::steady_clock::now();
    if (now - _last < redraw_interval) return;
    _last = now;
    _drawn = true;
    if (_total > 0) {
        fmt::print(stderr, "\r\033[K{} {} / {} ({}%)", _label, mebibytes(done), mebibytes(_total),
                   done * 100 / _total);
    } else {
        fmt::print(stderr, "\r\033[K{} {}", _label, mebibytes(done));
    }
    std::fflush(stderr);
}

}  // namespace dstream::cli::client
