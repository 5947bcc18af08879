// The cluster file (config/cluster_file.h) and the placement of groups on
// its nodes (runtime/cluster_map.h).
#include <map>
#include <set>
#include <string>

#include <gtest/gtest.h>

#include "config/cluster_file.h"
#include "config/setting.h"

namespace dstream::config {
namespace {

using runtime::cluster_map;

std::string nodes_text(int count) {
    std::string out;
    for (int i = 1; i <= count; ++i) {
        out += "[[node]]\nid = " + std::to_string(i) + "\nraft = \"127.0.0." + std::to_string(i + 1) +
               ":7100\"\nhttp = \"127.0.0." + std::to_string(i + 1) + ":4437\"\n";
    }
    return out;
}

std::string file_text(int nodes, int replicas = 3, int groups = 64) {
    return "cluster_id = \"prod-eu-1\"\ngroups = " + std::to_string(groups) +
           "\nreplicas = " + std::to_string(replicas) + "\n" + nodes_text(nodes);
}

// The message of the refusal of `text`, or "" when it is taken.
std::string refusal(const std::string& text) {
    try {
        (void)parse_cluster_file(text, "c.toml");
    } catch (const invalid_setting& e) {
        return e.what();
    }
    return "";
}

TEST(ClusterFile, ReadsEveryKeyOfTheIssuesExample) {
    const cluster_map map = parse_cluster_file(file_text(3), "c.toml");
    EXPECT_EQ(map.cluster_id(), "prod-eu-1");
    EXPECT_EQ(map.groups(), 64u);
    EXPECT_EQ(map.replicas(), 3u);
    ASSERT_EQ(map.nodes().size(), 3u);
    const runtime::cluster_node* two = map.node(2);
    ASSERT_NE(two, nullptr);
    EXPECT_EQ(two->raft.text(), "127.0.0.3:7100");
    EXPECT_EQ(two->http.host, "127.0.0.3");
    EXPECT_EQ(two->http.port, 4437);
    EXPECT_EQ(map.node(4), nullptr);
}

TEST(ClusterFile, NodesListedInAnyOrderAreKeptInIdOrder) {
    const std::string text =
        "cluster_id = \"c\"\ngroups = 4\nreplicas = 3\n"
        "[[node]]\nid = 30\nraft = \"[::1]:7103\"\nhttp = \"[::1]:4403\"\n"
        "[[node]]\nid = 10\nraft = \"localhost:7101\"\nhttp = \"localhost:4401\"\n"
        "[[node]]\nid = 20\nraft = \"10.0.0.2:7102\"\nhttp = \"10.0.0.2:4402\"\n";
    const cluster_map map = parse_cluster_file(text, "c.toml");
    EXPECT_EQ(map.nodes()[0].id, 10u);
    EXPECT_EQ(map.nodes()[2].id, 30u);
    EXPECT_EQ(map.nodes()[2].raft.host, "::1");
    EXPECT_EQ(map.nodes()[2].raft.text(), "[::1]:7103");
    EXPECT_EQ(map.voters(0), (std::vector<std::uint32_t>{10, 20, 30}));
}

TEST(ClusterFile, EachGroupHasItsReplicasOnDistinctNodesAndTheLoadIsEven) {
    for (const int nodes : {3, 5, 7}) {
        for (const int replicas : {3, 5}) {
            if (replicas > nodes) continue;
            const cluster_map map = parse_cluster_file(file_text(nodes, replicas, 64), "c.toml");
            std::map<std::uint32_t, int> hosted;
            std::map<std::uint32_t, int> preferred;
            for (std::size_t g = 0; g < map.groups(); ++g) {
                const auto voters = map.voters(g);
                ASSERT_EQ(voters.size(), static_cast<std::size_t>(replicas));
                EXPECT_EQ(std::set<std::uint32_t>(voters.begin(), voters.end()).size(), voters.size());
                for (const auto id : voters) {
                    ++hosted[id];
                    EXPECT_TRUE(map.hosts(id, g));
                }
                ++preferred[voters.front()];
            }
            const int per_node = 64 * replicas / nodes;
            for (const auto& [id, count] : hosted) {
                EXPECT_GE(count, per_node) << nodes << " nodes, node " << id;
                EXPECT_LE(count, per_node + 1) << nodes << " nodes, node " << id;
            }
            for (const auto& [id, count] : preferred) EXPECT_LE(count, 64 / nodes + 1);
        }
    }
}

TEST(ClusterFile, PlacementIsAFixedFunctionOfTheNodeList) {
    // Every node computes it alone: it must never change between versions.
    const cluster_map map = parse_cluster_file(file_text(5), "c.toml");
    EXPECT_EQ(map.voters(0), (std::vector<std::uint32_t>{1, 2, 3}));
    EXPECT_EQ(map.voters(3), (std::vector<std::uint32_t>{4, 5, 1}));
    EXPECT_EQ(map.voters(63), (std::vector<std::uint32_t>{4, 5, 1}));
    EXPECT_FALSE(map.hosts(2, 3));
}

TEST(ClusterFile, RefusesWhatCannotWorkAndSaysWhy) {
    EXPECT_NE(refusal(file_text(3, 4)).find("replicas must be 3 or 5"), std::string::npos);
    EXPECT_NE(refusal(file_text(3, 5)).find("needs as many nodes"), std::string::npos);
    EXPECT_NE(refusal(file_text(3, 3, 0)).find("positive"), std::string::npos);
    EXPECT_NE(refusal(file_text(3, 3, 5000)).find("groups must be 1 to 4096"), std::string::npos);
    EXPECT_NE(refusal("groups = 4\nreplicas = 3\n" + nodes_text(3)).find("'cluster_id' is missing"),
              std::string::npos);
    EXPECT_NE(refusal(file_text(3) + "replica = 3\n").find("unknown key"), std::string::npos);
    EXPECT_NE(refusal("cluster_id = \"a b\"\ngroups = 4\nreplicas = 3\n" + nodes_text(3))
                  .find("cluster_id"),
              std::string::npos);
    EXPECT_NE(refusal(file_text(3) + "[[node]]\nid = 2\nraft = \"h:1\"\nhttp = \"h:2\"\n")
                  .find("node 2 is listed twice"),
              std::string::npos);
    EXPECT_NE(refusal(file_text(3) + "[[node]]\nid = 9\nraft = \"127.0.0.2:7100\"\nhttp = \"h:2\"\n")
                  .find("which node 1 uses too"),
              std::string::npos);
    for (const char* bad : {"h", "h:0", "h:70000", ":80", "::1:80", "h:8x"}) {
        const std::string text = "cluster_id = \"c\"\ngroups = 4\nreplicas = 3\n" + nodes_text(2) +
                                 "[[node]]\nid = 3\nraft = \"" + bad + "\"\nhttp = \"h:2\"\n";
        EXPECT_NE(refusal(text).find("is not HOST:PORT"), std::string::npos) << bad;
    }
    const std::string unparsable = refusal("cluster_id = \n");
    EXPECT_NE(unparsable.find("cluster file c.toml: line 1"), std::string::npos) << unparsable;
    EXPECT_NE(refusal(file_text(3) + "[[node]]\nid = 4\nraft = \"h:1\"\n").find("'http' is missing"),
              std::string::npos);
}

TEST(ClusterFile, AFileThatIsNotThereIsNamed) {
    try {
        (void)read_cluster_file("/nonexistent/cluster.toml");
        FAIL() << "no refusal";
    } catch (const invalid_setting& e) {
        EXPECT_NE(std::string(e.what()).find("/nonexistent/cluster.toml"), std::string::npos);
    }
}

}  // namespace
}  // namespace dstream::config
