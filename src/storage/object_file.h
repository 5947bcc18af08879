#pragma once
// An object's bytes left in its file, for a read the edge sends straight
// from the file (sendfile): the kernel moves page-cache pages to the socket
// and the bytes never enter the server's memory.
#include <cstdint>
#include <memory>

#include "base/file_io.h"

namespace dstream::storage {

// A read-only descriptor of one object's file, closed with its last owner.
class object_file {
public:
    object_file(file_io& io, int fd) : _io(io), _fd(fd) {}
    ~object_file() { _io.close(_fd); }
    object_file(const object_file&) = delete;
    object_file& operator=(const object_file&) = delete;

    int fd() const { return _fd; }

private:
    file_io& _io;
    int _fd;
};

// [offset, offset + size) of an object's file.
struct file_slice {
    std::shared_ptr<const object_file> file;
    std::uint64_t offset = 0;
    std::uint64_t size = 0;
};

}  // namespace dstream::storage
