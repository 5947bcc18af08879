#include "edge/tls_credentials.h"

#include <array>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>
#include <openssl/err.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509err.h>
#include <spdlog/spdlog.h>

#include "edge/http_metrics.h"

namespace dstream::edge {
namespace {

namespace ssl = boost::asio::ssl;

// Mozilla's "intermediate" profile: ECDHE key exchange and AEAD ciphers for
// TLS 1.2 (all of them allowed by HTTP/2, RFC 9113 9.2.2); TLS 1.3's own
// suites. A client that cannot do these is older than TLS 1.2's end of life.
constexpr const char* tls12_ciphers =
    "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-RSA-AES128-GCM-SHA256:"
    "ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-RSA-AES256-GCM-SHA384:"
    "ECDHE-ECDSA-CHACHA20-POLY1305:ECDHE-RSA-CHACHA20-POLY1305";
constexpr const char* tls13_suites =
    "TLS_AES_128_GCM_SHA256:TLS_AES_256_GCM_SHA384:TLS_CHACHA20_POLY1305_SHA256";
constexpr const char* groups = "X25519:prime256v1:secp384r1";
// The session cache's scope (TLS 1.2 session ids): one per server.
constexpr unsigned char session_context[] = "dstream";

std::string openssl_reason() {
    const unsigned long e = ERR_get_error();
    ERR_clear_error();
    if (e == 0) return "unknown OpenSSL error";
    std::array<char, 256> text{};
    ERR_error_string_n(e, text.data(), text.size());
    return text.data();
}

// The server's choice among the client's protocols, in the server's order;
// without a common one the handshake goes on without ALPN (HTTP/1.1).
int select_alpn(SSL*, const unsigned char** out, unsigned char* outlen, const unsigned char* in,
                unsigned int inlen, void* arg) {
    const auto* offered = static_cast<const std::string_view*>(arg);
    unsigned char* chosen = nullptr;
    if (SSL_select_next_proto(
            &chosen, outlen, reinterpret_cast<const unsigned char*>(offered->data()),
            static_cast<unsigned int>(offered->size()), in, inlen) != OPENSSL_NPN_NEGOTIATED) {
        return SSL_TLSEXT_ERR_NOACK;
    }
    *out = chosen;
    return SSL_TLSEXT_ERR_OK;
}

std::string not_after(SSL_CTX* ctx) {
    X509* cert = SSL_CTX_get0_certificate(ctx);
    if (cert == nullptr) return "-";
    BIO* bio = BIO_new(BIO_s_mem());
    std::string out = "-";
    if (bio != nullptr && ASN1_TIME_print(bio, X509_get0_notAfter(cert)) == 1) {
        char* data = nullptr;
        const long n = BIO_get_mem_data(bio, &data);
        out.assign(data, static_cast<std::size_t>(n));
    }
    BIO_free(bio);
    return out;
}

}  // namespace

tls_credentials::tls_credentials(tls_files files, std::string_view alpn, std::string listener)
    : _files(std::move(files)), _alpn(alpn), _listener(std::move(listener)) {
    _current = load(nullptr);
    spdlog::info("tls: listener={} cert={} key={} not_after=\"{}\"", _listener, _files.cert,
                 _files.key, not_after(_current->native_handle()));
}

std::shared_ptr<ssl::context> tls_credentials::load(const ssl::context* previous) const {
    auto ctx = std::make_shared<ssl::context>(ssl::context::tls_server);
    SSL_CTX* native = ctx->native_handle();
    // RFC 8996: nothing below TLS 1.2. No renegotiation (a CPU sink for a
    // client), no compression (CRIME).
    SSL_CTX_set_min_proto_version(native, TLS1_2_VERSION);
    SSL_CTX_set_options(
        native, SSL_OP_NO_RENEGOTIATION | SSL_OP_NO_COMPRESSION | SSL_OP_CIPHER_SERVER_PREFERENCE);
    if (SSL_CTX_set_cipher_list(native, tls12_ciphers) != 1 ||
        SSL_CTX_set_ciphersuites(native, tls13_suites) != 1 ||
        SSL_CTX_set1_groups_list(native, groups) != 1) {
        throw std::runtime_error("tls: cannot set the cipher list: " + openssl_reason());
    }
    SSL_CTX_set_session_id_context(native, session_context, sizeof session_context - 1);
    SSL_CTX_set_session_cache_mode(native, SSL_SESS_CACHE_SERVER);
    SSL_CTX_set_alpn_select_cb(native, select_alpn, const_cast<std::string_view*>(&_alpn));
    // A handshake's buffers are given back while a connection idles: an idle
    // keep-alive connection holds no 2 × 16 KiB of record buffers.
    SSL_CTX_set_mode(native, SSL_MODE_RELEASE_BUFFERS);
    if (SSL_CTX_use_certificate_chain_file(native, _files.cert.c_str()) != 1) {
        throw std::runtime_error(fmt::format("tls: cannot load the certificate chain {}: {}",
                                             _files.cert, openssl_reason()));
    }
    if (SSL_CTX_use_PrivateKey_file(native, _files.key.c_str(), SSL_FILETYPE_PEM) != 1) {
        // OpenSSL checks the pair as it loads the key.
        if (ERR_GET_REASON(ERR_peek_last_error()) == X509_R_KEY_VALUES_MISMATCH) {
            ERR_clear_error();
            throw std::runtime_error(fmt::format(
                "tls: the key {} does not match the certificate {}", _files.key, _files.cert));
        }
        throw std::runtime_error(
            fmt::format("tls: cannot load the private key {}: {}", _files.key, openssl_reason()));
    }
    if (SSL_CTX_check_private_key(native) != 1) {
        throw std::runtime_error(
            fmt::format("tls: the key {} does not match the certificate {}: {}", _files.key,
                        _files.cert, openssl_reason()));
    }
    if (previous != nullptr) {
        SSL_CTX* old = const_cast<ssl::context*>(previous)->native_handle();
        const long size = SSL_CTX_get_tlsext_ticket_keys(old, nullptr, 0);
        std::vector<unsigned char> keys(static_cast<std::size_t>(size > 0 ? size : 0));
        if (!keys.empty() && SSL_CTX_get_tlsext_ticket_keys(old, keys.data(), size) == 1) {
            SSL_CTX_set_tlsext_ticket_keys(native, keys.data(), size);
        }
        OPENSSL_cleanse(keys.data(), keys.size());
    }
    return ctx;
}

bool tls_credentials::reload() {
    std::shared_ptr<ssl::context> previous = current();
    try {
        std::shared_ptr<ssl::context> next = load(previous.get());
        const std::string until = not_after(next->native_handle());
        {
            std::lock_guard lock(_mutex);
            _current = std::move(next);
        }
        http_metrics::get().tls_reloads.inc();
        spdlog::info("tls: reloaded listener={} cert={} not_after=\"{}\"", _listener, _files.cert,
                     until);
        return true;
    } catch (const std::exception& e) {
        http_metrics::get().tls_reload_failures.inc();
        spdlog::error("tls: reload refused listener={}: {}; the previous certificate stays",
                      _listener, e.what());
        return false;
    }
}

std::shared_ptr<ssl::context> tls_credentials::current() const {
    std::lock_guard lock(_mutex);
    return _current;
}

std::string_view negotiated_protocol(SSL* ssl) {
    const unsigned char* name = nullptr;
    unsigned int length = 0;
    SSL_get0_alpn_selected(ssl, &name, &length);
    if (name == nullptr) return {};
    return {reinterpret_cast<const char*>(name), length};
}

}  // namespace dstream::edge
