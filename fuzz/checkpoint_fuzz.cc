// Checkpoint restore (state::group_state::restore_checkpoint): the input is a
// checkpoint without its trailer, which is computed here so that the fuzzer
// explores the body instead of the checksum. Whatever loads must survive a
// capture and a second restore unchanged.
#include "checkpoint_bytes.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::string bytes(dstream::fuzz::as_text(data, size));
    dstream::fuzz::append_crc32(bytes);
    (void)dstream::fuzz::check_checkpoint_round_trip(bytes);
    return 0;
}
