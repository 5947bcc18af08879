#include "protocol/error_code.h"

namespace dstream::protocol {

std::string_view wire_code(error_code code) {
    switch (code) {
#define DSTREAM_X(name, wire, status, refusal) \
    case error_code::name:                     \
        return wire;
        DSTREAM_ERROR_CODES(DSTREAM_X)
#undef DSTREAM_X
    }
    return "INTERNAL";
}

unsigned http_status(error_code code) {
    switch (code) {
#define DSTREAM_X(name, wire, status, refusal) \
    case error_code::name:                     \
        return status;
        DSTREAM_ERROR_CODES(DSTREAM_X)
#undef DSTREAM_X
    }
    return 500;
}

bool proves_refusal(error_code code) {
    switch (code) {
#define DSTREAM_X(name, wire, status, refusal) \
    case error_code::name:                     \
        return refusal;
        DSTREAM_ERROR_CODES(DSTREAM_X)
#undef DSTREAM_X
    }
    return false;
}

}  // namespace dstream::protocol
