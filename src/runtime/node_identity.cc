#include "runtime/node_identity.h"

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstring>
#include <fcntl.h>
#include <fstream>
#include <random>
#include <stdexcept>

#include "base/durable_dirs.h"

namespace dstream::runtime {

std::string generate_cluster_id() {
    std::random_device rd;
    const std::uint64_t value = (std::uint64_t{rd()} << 32) ^ rd();
    static constexpr char hex[] = "0123456789abcdef";
    std::string id = "dstream-";
    for (int shift = 60; shift >= 0; shift -= 4) id.push_back(hex[(value >> shift) & 0xf]);
    return id;
}

bool is_valid_cluster_id(const std::string& id) {
    return !id.empty() && id.size() <= 64 && std::all_of(id.begin(), id.end(), [](char c) {
        return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' || c == '-';
    });
}

node_meta load_or_create_node_meta(const std::filesystem::path& data_dir, std::size_t group_count,
                                   file_io& io, const node_meta* cluster) {
    const auto file = data_dir / "node.meta";
    if (std::ifstream in{file}; in) {
        node_meta meta;
        std::string key;
        while (in >> key) {
            if (key == "cluster_id") {
                in >> meta.cluster_id;
            } else if (key == "groups") {
                in >> meta.group_count;
            } else if (key == "node") {
                in >> meta.node_id;
            }
        }
        if (!is_valid_cluster_id(meta.cluster_id) || meta.group_count == 0) {
            throw std::runtime_error(file.string() + " is damaged");
        }
        if (meta.group_count != group_count) {
            throw std::runtime_error("the data dir was created with --groups " +
                                     std::to_string(meta.group_count) + ", not " +
                                     std::to_string(group_count));
        }
        const std::uint32_t node = cluster != nullptr ? cluster->node_id : 0;
        if ((cluster != nullptr && meta.cluster_id != cluster->cluster_id) ||
            meta.node_id != node) {
            throw std::runtime_error(
                "the data dir belongs to " +
                (meta.node_id == 0 ? std::string("a single node")
                                   : "node " + std::to_string(meta.node_id)) +
                " of cluster " + meta.cluster_id + ", not to " +
                (node == 0 ? std::string("a single node") : "node " + std::to_string(node)) +
                (cluster != nullptr ? " of cluster " + cluster->cluster_id : std::string()));
        }
        return meta;
    }
    std::error_code ec;
    if (!create_durable_directories(data_dir, ec, io)) {
        throw std::runtime_error("cannot create the data dir " + data_dir.string());
    }
    node_meta meta{cluster != nullptr ? cluster->cluster_id : generate_cluster_id(), group_count,
                   cluster != nullptr ? cluster->node_id : 0};
    const auto tmp = data_dir / "node.meta.tmp";
    std::string text =
        "cluster_id " + meta.cluster_id + "\ngroups " + std::to_string(meta.group_count) + "\n";
    if (meta.node_id != 0) text += "node " + std::to_string(meta.node_id) + "\n";
    // Durable before it is visible under its name: a failed fsync stops the
    // start rather than leave a name whose bytes a power cut may take.
    const int fd = io.open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    const bool written = fd >= 0 && write_all(io, fd, text) && io.fsync(fd) == 0;
    if (fd >= 0) io.close(fd);
    if (!written || io.rename(tmp.c_str(), file.c_str()) != 0) {
        const std::string reason = std::strerror(errno);
        io.unlink(tmp.c_str());
        throw std::runtime_error("cannot write " + file.string() + ": " + reason);
    }
    if (!fsync_directory(data_dir, io)) {
        throw std::runtime_error("cannot fsync the data dir " + data_dir.string());
    }
    return meta;
}

}  // namespace dstream::runtime
