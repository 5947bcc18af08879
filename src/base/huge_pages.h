#pragma once
// Large buffers on transparent huge pages: one page fault per 2 MiB instead
// of one per 4 KiB when they are first written. On a virtual machine whose
// hypervisor traps every fault (measured at about 15 µs a fault on this
// project's 2-core VM) filling a fresh 32 MiB buffer takes about 250 ms of
// faults, and 10 ms on huge pages; a group's thread busy that long misses
// its Raft heartbeats. Small buffers are left alone, so idle memory stays as
// it is (huge pages for everything doubled the RSS of 10,000 idle streams).
#include <cstddef>
#include <string>

namespace dstream {

// Buffers at least this long are advised; the 2 MiB pages inside them only.
inline constexpr std::size_t huge_page_buffer_bytes = std::size_t{4} << 20;

// Asks for huge pages over the 2 MiB-aligned part of [data, data + size)
// when size >= huge_page_buffer_bytes, before it is first written; a
// request the kernel refuses changes nothing.
void advise_huge_pages(void* data, std::size_t size);

// Faults in the pages of [data, data + size) for writing in one call
// (MADV_POPULATE_WRITE), where a copy would fault them one at a time; a
// kernel without it changes nothing.
void populate_for_writing(void* data, std::size_t size);

// `s` emptied, with room for `size` bytes, advised as above.
void reserve_advised(std::string& s, std::size_t size);

}  // namespace dstream
