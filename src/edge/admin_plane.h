#pragma once
// The operator routes that change data or read it in bulk (backups, restores,
// an accepted loss), served on the admin listener only (`--admin-listen`):
// the client listener answers 404 to every one of them, whatever the request
// carries. Implemented by the composition root; the edge only authorizes
// the request (admin_token.h) and hands it over.
#include <string>

#include <boost/asio/awaitable.hpp>
#include <boost/beast/http/verb.hpp>

namespace dstream::edge {

struct admin_request {
    boost::beast::http::verb method = boost::beast::http::verb::get;
    std::string path;   // /__ursula/...
    std::string query;  // without the '?'
    std::string body;
};

// Operator routes keep their own answers (extensions 11 note): a status and
// a JSON body, an error's with the usual shape.
struct admin_answer {
    unsigned status = 200;
    std::string body;
};

class admin_plane {
public:
    virtual ~admin_plane() = default;
    // The answer to one authorized request on the admin listener. Its
    // coroutine runs on the connection's strand; long work goes elsewhere.
    virtual boost::asio::awaitable<admin_answer> answer(admin_request& request) = 0;
};

}  // namespace dstream::edge
