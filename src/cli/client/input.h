#pragma once
// A request body from a file (mapped, so a large snapshot is not copied into
// memory) or from standard input (read whole).
#include <cstddef>
#include <string>
#include <string_view>

namespace dstream::cli::client {

class input {
public:
    // `path` "-" or empty reads standard input. Throws std::runtime_error
    // naming the file when it cannot be read.
    static input open(const std::string& path);

    input(input&& other) noexcept;
    input& operator=(input&&) = delete;
    input(const input&) = delete;
    ~input();

    std::string_view bytes() const { return _bytes; }

private:
    input() = default;
    std::string _owned;        // standard input
    void* _mapping = nullptr;  // a mapped file
    std::size_t _mapped = 0;
    std::string_view _bytes;
};

}  // namespace dstream::cli::client
