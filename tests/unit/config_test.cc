#include <fstream>
#include <map>
#include <string>

#include <gtest/gtest.h>

#include "cli/serve_options.h"
#include "config/parse.h"
#include "config/render.h"
#include "config/resolve.h"

namespace dstream::config {
namespace {

struct fixture_options {
    bool flag = false;
    std::uint64_t size = 0;
    unsigned count = 0;
    std::string level;
};

std::vector<setting> table_for(fixture_options& o) {
    std::vector<setting> t;
    t.push_back(boolean("flag", o.flag, false, "a switch"));
    t.push_back(integer("size", o.size, mib(4), kib(64), gib(1), unit::bytes, "a size")
                    .preset("big", gib(1)));
    t.push_back(
        integer("count", o.count, 2, 1, 8, unit::count, "a count").preset("big", std::uint64_t{8}));
    t.push_back(choice("level", o.level, "info", {"info", "debug"}, "a choice"));
    return t;
}

const std::vector<preset> presets{{"big", "everything larger"}};

inputs with_env(std::map<std::string, std::string> env) {
    inputs in;
    in.env = [env = std::move(env)](const std::string& name) -> std::optional<std::string> {
        const auto it = env.find(name);
        return it == env.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    return in;
}

std::string message_of(const std::function<void()>& f) {
    try {
        f();
    } catch (const invalid_setting& e) {
        return e.what();
    }
    return "(no error)";
}

TEST(config, names_derive_from_the_key) {
    fixture_options o;
    const auto t = table_for(o);
    EXPECT_EQ(flag_name(t[1]), "--size");
    EXPECT_EQ(env_name(t[1]), "DSTREAM_SIZE");
    EXPECT_EQ(flag_name("wal_segment_bytes"), "--wal-segment-bytes");
}

TEST(config, byte_sizes_take_binary_suffixes) {
    fixture_options o;
    const auto t = table_for(o);
    EXPECT_EQ(std::get<std::uint64_t>(parse_text(t[1], "65536", "x")), kib(64));
    EXPECT_EQ(std::get<std::uint64_t>(parse_text(t[1], "64MiB", "x")), mib(64));
    EXPECT_EQ(std::get<std::uint64_t>(parse_text(t[1], "1 GiB", "x")), gib(1));
    EXPECT_EQ(
        message_of([&] { parse_text(t[1], "64MB", "env DSTREAM_SIZE"); }),
        "setting size (env DSTREAM_SIZE = \"64MB\"): must be an integer from 64 KiB to 1 GiB");
    // Counts take no suffix.
    EXPECT_NE(message_of([&] { parse_text(t[2], "2KiB", "x"); }), "(no error)");
}

TEST(config, bounds_and_types_are_checked_with_the_setting_named) {
    fixture_options o;
    const auto t = table_for(o);
    EXPECT_EQ(message_of([&] { parse_text(t[2], "9", "flag --count"); }),
              "setting count (flag --count = \"9\"): must be an integer from 1 to 8");
    EXPECT_EQ(message_of([&] { parse_text(t[2], "-1", "flag --count"); }),
              "setting count (flag --count = \"-1\"): must be an integer from 1 to 8");
    EXPECT_NE(
        message_of([&] { parse_text(t[1], "99999999999999999999 TiB", "x"); }).find("must be"),
        std::string::npos);
    EXPECT_EQ(message_of([&] { parse_text(t[0], "yes", "env DSTREAM_FLAG"); }),
              "setting flag (env DSTREAM_FLAG = \"yes\"): must be true or false");
    EXPECT_EQ(message_of([&] { parse_text(t[3], "loud", "flag --level"); }),
              "setting level (flag --level = \"loud\"): must be one of info, debug");
    EXPECT_TRUE(std::get<bool>(parse_text(t[0], "1", "x")));
}

TEST(config, precedence_is_flag_env_file_preset_default) {
    fixture_options o;
    const auto t = table_for(o);
    inputs in =
        with_env({{"DSTREAM_COUNT", "5"}, {"DSTREAM_PRESET", "big"}, {"DSTREAM_LEVEL", "debug"}});
    in.flags = {{"level", "info"}};
    const effective e = resolve(t, presets, in);
    EXPECT_EQ(e.preset, "big");
    EXPECT_EQ(e.preset_from, source::env);
    EXPECT_EQ(e.values[0].from, source::fallback);
    EXPECT_EQ(e.values[1].from, source::preset);
    EXPECT_EQ(std::get<std::uint64_t>(e.values[1].v), gib(1));
    EXPECT_EQ(e.values[2].from, source::env);
    EXPECT_EQ(e.values[3].from, source::flag);
    store(e);
    EXPECT_EQ(o.size, gib(1));
    EXPECT_EQ(o.count, 5u);
    EXPECT_EQ(o.level, "info");
}

TEST(config, a_value_that_a_higher_source_overrides_is_still_checked) {
    fixture_options o;
    const auto t = table_for(o);
    inputs in = with_env({{"DSTREAM_COUNT", "99"}});
    in.flags = {{"count", "3"}};
    EXPECT_EQ(message_of([&] { resolve(t, presets, in); }),
              "setting count (env DSTREAM_COUNT = \"99\"): must be an integer from 1 to 8");
}

TEST(config, the_file_is_read_and_unknown_keys_refused) {
    fixture_options o;
    const auto t = table_for(o);
    const std::string path = ::testing::TempDir() + "dstream_config_test.toml";
    std::ofstream(path) << "size = \"8 MiB\"\ncount = 3\nflag = true\n";
    inputs in = with_env({});
    in.config_file = path;
    const effective e = resolve(t, presets, in);
    EXPECT_EQ(std::get<std::uint64_t>(e.values[1].v), mib(8));
    EXPECT_EQ(e.values[1].from, source::file);
    EXPECT_TRUE(std::get<bool>(e.values[0].v));

    std::ofstream(path) << "sise = 1\n";
    EXPECT_EQ(
        message_of([&] { resolve(t, presets, in); }),
        "config file " + path + ": unknown setting 'sise' (`dstream config docs` lists them)");
    std::ofstream(path) << "count = \"three\"\n";
    EXPECT_EQ(message_of([&] { resolve(t, presets, in); }),
              "setting count (file " + path + " = \"three\"): must be an integer from 1 to 8");
    std::ofstream(path) << "flag = 1\n";
    EXPECT_EQ(message_of([&] { resolve(t, presets, in); }),
              "setting flag (file " + path + " = a TOML integer): must be true or false");
}

TEST(config, print_reads_back_as_the_same_values) {
    fixture_options o;
    const auto t = table_for(o);
    inputs in = with_env({});
    in.flags = {{"size", "2MiB"}, {"preset", "big"}};
    const std::string printed = render_toml(resolve(t, presets, in));
    EXPECT_NE(printed.find("size = 2097152"), std::string::npos) << printed;
    EXPECT_NE(printed.find("# flag, 2 MiB"), std::string::npos) << printed;
    EXPECT_NE(printed.find("# preset big"), std::string::npos) << printed;

    const std::string path = ::testing::TempDir() + "dstream_config_print.toml";
    std::ofstream(path) << printed;
    inputs again = with_env({});
    again.config_file = path;
    const effective e = resolve(t, presets, again);
    EXPECT_EQ(std::get<std::uint64_t>(e.values[1].v), mib(2));
    EXPECT_EQ(std::get<std::uint64_t>(e.values[2].v), 8u);
}

TEST(config, every_serve_default_is_within_its_bounds) {
    cli::serve_options o;
    for (const auto& s : cli::serve_settings(o)) {
        if (const auto* n = std::get_if<std::uint64_t>(&s.fallback)) {
            EXPECT_GE(*n, s.min) << s.key;
            EXPECT_LE(*n, s.max) << s.key;
        }
        for (const auto& [name, v] : s.presets) {
            const auto n = std::get<std::uint64_t>(v);
            EXPECT_GE(n, s.min) << s.key << " " << name;
            EXPECT_LE(n, s.max) << s.key << " " << name;
        }
    }
}

}  // namespace
}  // namespace dstream::config
