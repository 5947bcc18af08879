#pragma once
// A scripted HTTP server on 127.0.0.1 standing in for S3 where a real one
// cannot be made to fail on cue: each connection carries one request and
// gets the next answer of the script (a status and body, a reset, or
// silence, or a ranged answer from an object's bytes, perhaps cut short by a
// reset), then closes. With the script empty it answers 200.
#include <atomic>
#include <cstdint>
#include <deque>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

namespace dstream::testing {

struct fake_answer {
    enum class kind { respond, reset, stall, ranged };
    kind what = kind::respond;
    int status = 200;
    std::string body;                  // ranged: the whole object
    std::vector<std::string> headers;  // "Name: value"
    // ranged: the connection resets after this many bytes of the body.
    std::size_t cut_after = std::string::npos;

    static fake_answer s3_error(int status, const std::string& code) {
        return {kind::respond, status, "<Error><Code>" + code + "</Code></Error>", {}};
    }
    static fake_answer reset() { return {kind::reset}; }
    // Reads the request and answers nothing until the client gives up.
    static fake_answer stall() { return {kind::stall}; }
    // 206 with the bytes of `object` that the request's Range names (and
    // their Content-Range), reset after `cut_after` bytes of them.
    static fake_answer ranged(std::string object, std::size_t cut_after = std::string::npos) {
        return {kind::ranged, 206, std::move(object), {}, cut_after};
    }
};

class fake_s3_server {
public:
    // Port 0: any free one. A given port binds again after an earlier server's.
    explicit fake_s3_server(std::uint16_t port = 0);
    ~fake_s3_server();
    fake_s3_server(const fake_s3_server&) = delete;
    fake_s3_server& operator=(const fake_s3_server&) = delete;

    void script(std::vector<fake_answer> answers);
    std::uint16_t port() const { return _port; }
    std::string endpoint() const { return "http://127.0.0.1:" + std::to_string(_port); }
    // "METHOD /path?query" of each request so far.
    std::vector<std::string> requests() const;
    // The Range header of each request so far ("" for none).
    std::vector<std::string> ranges() const;

private:
    void serve();
    void handle(int connection);
    fake_answer next_answer();

    int _listener = -1;
    std::uint16_t _port = 0;
    std::atomic<bool> _stopping{false};
    mutable std::mutex _mutex;
    std::deque<fake_answer> _script;
    std::vector<std::string> _requests;
    std::vector<std::string> _ranges;
    std::thread _thread;
};

}  // namespace dstream::testing
