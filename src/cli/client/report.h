#pragma once
// How the client commands tell what happened. People get the status line and
// the protocol's headers; `--json` gets one JSON object per answer. An error
// answer names the server's error code and message (extensions 11).
#include <string_view>

#include <nlohmann/json.hpp>

#include "cli/client/http.h"

namespace dstream::cli::client {

// Prints an answer to a write or HEAD (stdout) or its failure (stderr, or
// stdout under --json) and returns the exit code: 0, 1 for an error answer,
// 3 for no answer.
int report(const response& r, bool json);

// Prints why an exchange did not succeed and returns the exit code (1 or 3).
int report_failure(const response& r, bool json);

// {"status": .., "headers": {lower-case name: value}}.
nlohmann::json answer_json(const response& r);

// Adds `bytes` to `out` as "data" when the content type is text, else as
// "data_base64".
void add_data(nlohmann::json& out, std::string_view content_type, std::string_view bytes);

// One object on one line of stdout; invalid UTF-8 in strings is replaced.
void print_json(const nlohmann::json& j);

}  // namespace dstream::cli::client
