#include "base/version.h"

namespace dstream {

std::string_view version() { return DSTREAM_VERSION; }

}  // namespace dstream
