#pragma once
// A subcommand of `dstream`: its CLI11 node and what it does once parsed.
#include <functional>

#include <CLI/CLI.hpp>

namespace dstream::cli {

// Exit codes of every subcommand.
inline constexpr int exit_ok = 0;
inline constexpr int exit_failure = 1;  // the server answered with an error, or a local step failed
inline constexpr int exit_usage = 2;    // bad arguments or configuration
inline constexpr int exit_no_answer = 3;  // the server could not be reached or the answer broke off

struct command {
    CLI::App* app = nullptr;
    std::function<int()> run;  // returns the exit code
};

}  // namespace dstream::cli
