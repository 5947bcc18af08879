// OpenSSL's heap calls through edge/openssl_memory.h: the same semantics as
// OpenSSL's defaults, installed before OpenSSL's first allocation and refused
// after it, and TLS work done through them.
#include "edge/openssl_memory.h"

#include <cstdlib>
#include <cstring>

#include <gtest/gtest.h>
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/ssl.h>

namespace dstream::edge::openssl_memory {
namespace {

TEST(OpensslMemory, KeepsOpensslsSemantics) {
    EXPECT_EQ(allocate(0, __FILE__, __LINE__), nullptr);

    void* block = allocate(16, __FILE__, __LINE__);
    ASSERT_NE(block, nullptr);
    std::memcpy(block, "0123456789abcdef", 16);
    block = reallocate(block, 4096, __FILE__, __LINE__);
    ASSERT_NE(block, nullptr);
    EXPECT_EQ(std::memcmp(block, "0123456789abcdef", 16), 0);
    EXPECT_EQ(reallocate(block, 0, __FILE__, __LINE__), nullptr);  // freed

    void* fresh = reallocate(nullptr, 8, __FILE__, __LINE__);
    ASSERT_NE(fresh, nullptr);
    release(fresh, __FILE__, __LINE__);
    release(nullptr, __FILE__, __LINE__);
}

// Each in a process of its own: OpenSSL takes functions only before its first
// allocation, and this test binary may have made one in another test.
TEST(OpensslMemory, InstalledBeforeTheFirstAllocationAndUsed) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            if (!install()) std::exit(1);
            CRYPTO_malloc_fn m = nullptr;
            CRYPTO_realloc_fn r = nullptr;
            CRYPTO_free_fn f = nullptr;
            CRYPTO_get_mem_functions(&m, &r, &f);
            if (m != allocate || r != reallocate || f != release) std::exit(2);
            SSL_CTX* ctx = SSL_CTX_new(TLS_server_method());
            if (ctx == nullptr) std::exit(3);
            SSL* ssl = SSL_new(ctx);
            if (ssl == nullptr) std::exit(4);
            ERR_clear_error();
            SSL_free(ssl);
            SSL_CTX_free(ctx);
            std::exit(0);
        },
        testing::ExitedWithCode(0), "");
}

TEST(OpensslMemory, RefusedOnceOpensslHasAllocated) {
    GTEST_FLAG_SET(death_test_style, "threadsafe");
    EXPECT_EXIT(
        {
            void* early = OPENSSL_malloc(32);
            OPENSSL_free(early);
            std::exit(install() ? 1 : 0);
        },
        testing::ExitedWithCode(0), "");
}

}  // namespace
}  // namespace dstream::edge::openssl_memory
