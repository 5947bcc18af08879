#include "cli/client/input.h"

#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <iostream>
#include <iterator>
#include <stdexcept>
#include <unistd.h>

#include <sys/mman.h>
#include <sys/stat.h>

namespace dstream::cli::client {
namespace {

[[noreturn]] void cannot_read(const std::string& path) {
    throw std::runtime_error("cannot read " + path + ": " + std::strerror(errno));
}

}  // namespace

input input::open(const std::string& path) {
    input in;
    if (path.empty() || path == "-") {
        in._owned.assign(std::istreambuf_iterator<char>(std::cin),
                         std::istreambuf_iterator<char>());
        in._bytes = in._owned;
        return in;
    }
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
    if (fd < 0) cannot_read(path);
    struct stat st {};
    if (::fstat(fd, &st) != 0) {
        ::close(fd);
        cannot_read(path);
    }
    if (!S_ISREG(st.st_mode)) {
        ::close(fd);
        throw std::runtime_error("cannot read " + path + ": not a regular file");
    }
    const auto size = static_cast<std::size_t>(st.st_size);
    // mmap refuses a length of 0: an empty file is an empty body.
    if (size > 0) {
        void* p = ::mmap(nullptr, size, PROT_READ, MAP_PRIVATE, fd, 0);
        if (p == MAP_FAILED) {
            ::close(fd);
            cannot_read(path);
        }
        in._mapping = p;
        in._mapped = size;
        in._bytes = std::string_view(static_cast<const char*>(p), size);
    }
    ::close(fd);
    return in;
}

input::input(input&& other) noexcept
    : _owned(std::move(other._owned)), _mapping(other._mapping), _mapped(other._mapped) {
    _bytes = _mapping != nullptr ? other._bytes : std::string_view(_owned);
    other._mapping = nullptr;
    other._mapped = 0;
    other._bytes = {};
}

input::~input() {
    if (_mapping != nullptr) ::munmap(_mapping, _mapped);
}

}  // namespace dstream::cli::client
