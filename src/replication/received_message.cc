#include "replication/received_message.h"

#include <new>

#include "base/huge_pages.h"
#include "replication/raft/raft_core.h"

namespace dstream::replication {

received_message::received_message(std::size_t size)
    : _data(static_cast<char*>(raft_core_alloc_message(size))), _size(size) {
    if (!_data) throw std::bad_alloc();
    advise_huge_pages(_data.get(), size);
}

void received_message::core_free::operator()(char* p) const { raft_core_free_entries(p); }

}  // namespace dstream::replication
