#pragma once
// The TLS side of a listener (base protocol 12.11: HTTPS in production): its
// certificate chain and key (PEM files), TLS 1.2 and 1.3 only with AEAD
// ciphers and forward secrecy, ALPN, and session resumption (tickets, and a
// session cache for TLS 1.2 clients without them).
//
// reload() builds a new context from the files and swaps it in for the
// connections accepted after it; an open connection keeps the context it
// began with until it closes, so a reload drops nothing. A pair that does not
// load is logged and the current one kept. The ticket keys carry over, so a
// client resumes across a reload too.
#include <memory>
#include <mutex>
#include <string>
#include <string_view>

#include <boost/asio/ssl/context.hpp>

namespace dstream::edge {

struct tls_files {
    std::string cert;  // PEM: the certificate, then its chain
    std::string key;   // PEM: the private key, unencrypted
};

// The protocols a listener offers by ALPN, in its order of preference, in the
// wire format (each name after its length byte).
inline constexpr std::string_view alpn_http11{"\x08http/1.1", 9};
inline constexpr std::string_view alpn_h2_http11{"\x02h2\x08http/1.1", 12};

class tls_credentials {
public:
    // Loads the pair; throws std::runtime_error naming the file and
    // OpenSSL's reason. `alpn` must outlive the credentials (a constant above).
    // `listener` names it in the log ("client", "admin").
    tls_credentials(tls_files files, std::string_view alpn, std::string listener);

    // Reads the files again. Any thread. False (and an error line in the
    // log) when they do not make a usable pair; the current one stays.
    bool reload();

    // The context a new connection takes and holds for its life.
    std::shared_ptr<boost::asio::ssl::context> current() const;

    // The files loaded, and the protocols offered, for the start line.
    const tls_files& files() const { return _files; }
    std::string_view alpn() const { return _alpn; }

private:
    // A context from the files; ticket keys taken from `previous` when set.
    std::shared_ptr<boost::asio::ssl::context> load(
        const boost::asio::ssl::context* previous) const;

    tls_files _files;
    std::string_view _alpn;
    std::string _listener;
    mutable std::mutex _mutex;
    std::shared_ptr<boost::asio::ssl::context> _current;
};

// The protocol a handshake chose by ALPN ("h2", "http/1.1"); empty when the
// client offered none.
std::string_view negotiated_protocol(SSL* ssl);

}  // namespace dstream::edge
