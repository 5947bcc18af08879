#pragma once
#include <string_view>

namespace dstream {

// The project version from CMake (the start log line, dstream_build_info).
std::string_view version();

}  // namespace dstream
