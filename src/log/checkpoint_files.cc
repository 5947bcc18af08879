#include "log/checkpoint_files.h"

#include <cstdio>
#include <cstring>
#include <fcntl.h>
#include <stdexcept>
#include <unistd.h>

#include <spdlog/spdlog.h>

#include "base/crc32.h"
#include "base/durable_dirs.h"

namespace dstream::log {
namespace {

namespace fs = std::filesystem;

bool parse_name(const fs::path& p, std::uint32_t& group, std::uint64_t& index) {
    unsigned g = 0;
    unsigned long long i = 0;
    char tail[8] = {};
    if (std::sscanf(p.filename().c_str(), "g%5u-%20llu.%5s", &g, &i, tail) != 3 ||
        std::string(tail) != "ckpt") {
        return false;
    }
    group = g;
    index = i;
    return true;
}

}  // namespace

checkpoint_files::checkpoint_files(fs::path dir, file_io& io) : _dir(std::move(dir)), _io(io) {
    std::error_code ec;
    if (!create_durable_directories(_dir, ec, _io))
        throw std::runtime_error("cannot create " + _dir.string());
}

namespace {

constexpr std::string_view header_magic = "DSTRSNP1";

void put_le32(std::string& out, std::uint32_t v) {
    for (int i = 0; i < 4; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}

std::uint32_t get_le32(std::string_view in) {
    std::uint32_t v = 0;
    for (int i = 0; i < 4; ++i) {
        v |= static_cast<std::uint32_t>(static_cast<unsigned char>(in[i])) << (8 * i);
    }
    return v;
}

}  // namespace

status checkpoint_files::write(std::uint32_t group, std::uint64_t index, std::string_view header,
                               const state::checkpoint_image& image) {
    char name[64];
    std::snprintf(name, sizeof name, "g%05u-%020llu.ckpt", group,
                  static_cast<unsigned long long>(index));
    const fs::path target = _dir / name;
    const fs::path tmp = target.string() + ".tmp";
    const auto failed = [&] {
        const int failure = errno;
        _io.unlink(tmp.c_str());
        spdlog::error("cannot write checkpoint {}: {}", target.string(), std::strerror(failure));
        return make_error(protocol::error_code::internal, "checkpoint write failed");
    };
    const int fd = _io.open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd < 0) return failed();
    std::string head(header_magic);
    put_le32(head, static_cast<std::uint32_t>(header.size()));
    head += header;
    put_le32(head, crc32_of(header));
    bool ok = write_all(_io, fd, head);
    std::uint32_t crc = 0;
    for (const auto& piece : image.pieces) {
        if (!ok) break;
        crc = crc32_update(crc, std::string_view(piece.data, piece.size));
        if (!write_all(_io, fd, std::string_view(piece.data, piece.size))) {
            ok = false;
            break;
        }
    }
    char trailer[4];
    for (int i = 0; i < 4; ++i) trailer[i] = static_cast<char>((crc >> (8 * i)) & 0xff);
    ok = ok && write_all(_io, fd, std::string_view(trailer, 4)) && _io.fdatasync(fd) == 0;
    if (ok) drop_cached_pages(_io, fd);  // read again only by a restart
    _io.close(fd);
    if (!ok) return failed();
    if (_io.rename(tmp.c_str(), target.c_str()) != 0) return failed();
    if (!fsync_directory(_dir, _io)) return failed();
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(_dir, ec)) {
        std::uint32_t g = 0;
        std::uint64_t i = 0;
        if (parse_name(e.path(), g, i) && g == group && i < index) _io.unlink(e.path().c_str());
    }
    return ok_status();
}

result<checkpoint_files::loaded> checkpoint_files::load(const entry& which) const {
    const auto damaged = [&](const char* what) {
        return make_error(protocol::error_code::internal,
                          "checkpoint " + which.path.string() + " " + what);
    };
    std::string bytes;
    if (!read_all(_io, which.path.c_str(), bytes)) return damaged("cannot be read");
    loaded out;
    if (!std::string_view(bytes).starts_with(header_magic)) {
        out.image = std::move(bytes);  // written before checkpoints had a header
        return out;
    }
    const std::size_t at = header_magic.size();
    if (bytes.size() < at + 8) return damaged("has a truncated header");
    const std::uint32_t length = get_le32(std::string_view(bytes).substr(at, 4));
    if (bytes.size() < at + 8 + length) return damaged("has a truncated header");
    out.header = bytes.substr(at + 4, length);
    if (get_le32(std::string_view(bytes).substr(at + 4 + length, 4)) != crc32_of(out.header)) {
        return damaged("has a header that fails its checksum");
    }
    out.image = bytes.substr(at + 8 + length);
    return out;
}

std::map<std::uint32_t, checkpoint_files::entry> checkpoint_files::newest() const {
    std::map<std::uint32_t, entry> out;
    for (const auto& e : fs::directory_iterator(_dir)) {
        std::uint32_t g = 0;
        std::uint64_t i = 0;
        if (!parse_name(e.path(), g, i)) continue;
        auto& slot = out[g];
        if (slot.path.empty() || i > slot.index) slot = entry{i, e.path()};
    }
    return out;
}

}  // namespace dstream::log
