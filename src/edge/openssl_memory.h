#pragma once
// OpenSSL's heap calls, through functions of our own.
//
// Asio's TLS engine clears OpenSSL's error queue before every read and every
// write (ERR_clear_error), and OpenSSL 3.0 does that by freeing the file and
// function names of all sixteen slots, each usually a null pointer: 32 calls
// of free(NULL) through CRYPTO_free and the allocator's own entry, three
// times per append over TLS. Ours return at once on a null pointer and
// otherwise do what OpenSSL's defaults do, on the process's malloc.
#include <cstddef>

namespace dstream::edge::openssl_memory {

// OpenSSL's default semantics: no block for zero bytes, and a reallocation
// to zero bytes frees the block.
void* allocate(std::size_t bytes, const char* file, int line);
void* reallocate(void* block, std::size_t bytes, const char* file, int line);
void release(void* block, const char* file, int line);

// Makes OpenSSL use the functions above. Only before its first allocation:
// false once it has allocated (it then keeps its own, which work the same).
bool install();

}  // namespace dstream::edge::openssl_memory
