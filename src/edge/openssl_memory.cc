#include "edge/openssl_memory.h"

#include <cstdlib>

#include <openssl/crypto.h>

namespace dstream::edge::openssl_memory {

void* allocate(std::size_t bytes, const char* /*file*/, int /*line*/) {
    return bytes == 0 ? nullptr : std::malloc(bytes);
}

void* reallocate(void* block, std::size_t bytes, const char* file, int line) {
    if (block == nullptr) return allocate(bytes, file, line);
    if (bytes == 0) {
        std::free(block);
        return nullptr;
    }
    return std::realloc(block, bytes);
}

void release(void* block, const char* /*file*/, int /*line*/) {
    if (block != nullptr) std::free(block);
}

bool install() { return CRYPTO_set_mem_functions(allocate, reallocate, release) == 1; }

}  // namespace dstream::edge::openssl_memory
