#include "base/crc32.h"

#include <isa-l/crc.h>

namespace dstream {

std::uint32_t crc32_update(std::uint32_t running, std::string_view bytes) {
    return crc32_gzip_refl(running, reinterpret_cast<const unsigned char*>(bytes.data()),
                           bytes.size());
}

}  // namespace dstream
