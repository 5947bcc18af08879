#pragma once
// Turns what a person wrote (a flag, an environment variable, a TOML value)
// into a setting's value, checked against its type and bounds.
#include <string>
#include <string_view>

#include <toml++/toml.h>

#include "config/setting.h"

namespace dstream::config {

// `where` names the source for the message: "flag --hot-bytes", "env DSTREAM_HOT_BYTES".
// Integers are decimal; byte sizes may end in KiB, MiB, GiB or TiB.
// Booleans are true, false, 1 or 0.
value parse_text(const setting& s, std::string_view text, std::string_view where);

// A TOML value: a boolean, an integer, or a string (a byte size may be "64 MiB").
value parse_toml(const setting& s, const toml::node& node, std::string_view where);

}  // namespace dstream::config
