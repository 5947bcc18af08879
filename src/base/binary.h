#pragma once
// Little-endian binary encoding for log records and checkpoints.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

#include "base/huge_pages.h"

namespace dstream {

class binary_writer {
public:
    void put_u8(std::uint8_t v) { _out.push_back(static_cast<char>(v)); }
    void put_u32(std::uint32_t v) {
        for (int i = 0; i < 4; ++i) put_u8(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    void put_u64(std::uint64_t v) {
        for (int i = 0; i < 8; ++i) put_u8(static_cast<std::uint8_t>(v >> (8 * i)));
    }
    void put_string(std::string_view s) {
        put_u32(static_cast<std::uint32_t>(s.size()));
        _out.append(s);
    }
    void reserve(std::size_t bytes) {
        if (bytes > _out.capacity() && _out.empty()) {
            reserve_advised(_out, bytes);
        } else {
            _out.reserve(bytes);
        }
    }
    std::string take() && { return std::move(_out); }

private:
    std::string _out;
};

// Every getter returns false, and leaves the reader failed, on truncated input.
class binary_reader {
public:
    explicit binary_reader(std::string_view in) : _in(in) {}
    bool get_u8(std::uint8_t& v) {
        if (_in.empty()) return false;
        v = static_cast<std::uint8_t>(_in.front());
        _in.remove_prefix(1);
        return true;
    }
    bool get_u32(std::uint32_t& v) { return get_le(v); }
    bool get_u64(std::uint64_t& v) { return get_le(v); }
    bool get_string(std::string& s) {
        std::uint32_t n = 0;
        return get_u32(n) && get_bytes(n, s);
    }
    bool get_bytes(std::uint64_t n, std::string& s) {
        if (_in.size() < n) return false;
        if (n >= huge_page_buffer_bytes) reserve_advised(s, n);
        s.assign(_in.substr(0, n));
        _in.remove_prefix(n);
        return true;
    }
    bool at_end() const { return _in.empty(); }

private:
    template <typename T>
    bool get_le(T& v) {
        if (_in.size() < sizeof(T)) return false;
        v = 0;
        for (std::size_t i = 0; i < sizeof(T); ++i) {
            v |= static_cast<T>(static_cast<std::uint8_t>(_in[i])) << (8 * i);
        }
        _in.remove_prefix(sizeof(T));
        return true;
    }
    std::string_view _in;
};

}  // namespace dstream
