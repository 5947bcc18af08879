#include "runtime/node_identity.h"

#include <algorithm>
#include <cctype>
#include <fstream>
#include <random>
#include <stdexcept>

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
               return std::isalnum(static_cast<unsigned char>(c)) != 0 || c == '.' || c == '_' ||
                      c == '-';
           });
}

std::string load_or_create_cluster_id(const std::filesystem::path& data_dir) {
    const auto file = data_dir / "cluster-id";
    if (std::ifstream in{file}; in) {
        std::string id;
        std::getline(in, id);
        if (!is_valid_cluster_id(id)) {
            throw std::runtime_error("invalid cluster id in " + file.string());
        }
        return id;
    }
    std::filesystem::create_directories(data_dir);
    const std::string id = generate_cluster_id();
    const auto tmp = data_dir / "cluster-id.tmp";
    {
        std::ofstream out{tmp, std::ios::trunc};
        out << id << "\n";
        out.flush();
        if (!out) throw std::runtime_error("cannot write " + tmp.string());
    }
    std::filesystem::rename(tmp, file);
    return id;
}

}  // namespace dstream::runtime
