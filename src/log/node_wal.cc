#include "log/node_wal.h"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstring>
#include <fcntl.h>
#include <unistd.h>
#include <unordered_map>
#include <utility>

#include <spdlog/spdlog.h>
#include <sys/stat.h>
#include <sys/uio.h>

#include "base/background_thread.h"
#include "base/durable_dirs.h"
#include "log/wal_format.h"
#include "log/wal_metrics.h"
#include "metrics/stopwatch.h"

namespace dstream::log {
namespace {

namespace fs = std::filesystem;

std::string errno_text(const char* what, const fs::path& path) {
    return std::string(what) + " " + path.string() + ": " + std::strerror(errno);
}

// One allocation of the file's size: a segment is read whole at recovery.
std::string read_file(file_io& io, const fs::path& path) {
    std::string data;
    if (!read_all(io, path.c_str(), data)) throw std::runtime_error(errno_text("cannot read", path));
    return data;
}

void cut_file(file_io& io, const fs::path& path, std::uint64_t size) {
    const int fd = io.open(path.c_str(), O_WRONLY | O_CLOEXEC);
    const bool cut = fd >= 0 && io.ftruncate(fd, static_cast<off_t>(size)) == 0;
    if (!cut) {
        const std::string text = errno_text("cannot truncate", path);
        if (fd >= 0) io.close(fd);
        throw std::runtime_error(text);
    }
    io.close(fd);
}

error disk_pressure() {
    return make_error(protocol::error_code::wal_disk_pressure,
                      "the server cannot persist writes right now");
}

std::vector<std::pair<std::uint64_t, fs::path>> list_segments(const fs::path& dir) {
    std::vector<std::pair<std::uint64_t, fs::path>> out;
    for (const auto& e : fs::directory_iterator(dir)) {
        const auto name = e.path().filename().string();
        if (e.path().extension() != ".wal" || name.size() != 24) continue;
        out.emplace_back(std::stoull(name.substr(0, 20)), e.path());
    }
    std::sort(out.begin(), out.end());
    return out;
}

// Whether the damage at `from` is corruption rather than a torn tail. A
// whole, valid record after it (starting before `until`) shows the log went
// on past it; in a watermarked segment only a watermark beyond `from` does,
// since a batch written while `from` was unflushed may reach the disk first.
// (A record is never all zeros: the checksum of zeros is not 0.)
bool damage_is_corruption(std::string_view data, std::size_t from, std::size_t until,
                          bool watermarked) {
    for (std::size_t at = from + 1; at < until && at + wal_record_header_bytes <= data.size();
         ++at) {
        wal_record r;
        std::size_t used = 0;
        if (decode_wal_record(data.substr(at), r, used) != wal_decode_status::ok) continue;
        if (!watermarked || (r.group == wal_watermark_group && r.index > from)) return true;
        at += used - 1;  // not into its payload: a stream's bytes may look like records
    }
    return false;
}

}  // namespace

node_wal::node_wal(wal_options options, file_io& io)
    : _options(std::move(options)), _io(io), _metrics(wal_metrics::get()) {
    std::error_code ec;
    if (!create_durable_directories(_options.dir, ec, _io)) {
        throw std::runtime_error("cannot create " + _options.dir.string());
    }
}

node_wal::~node_wal() {
    stop();
    if (_fd >= 0) _io.close(_fd);
    for (const int fd : _sync_fds) _io.close(fd);
}

fs::path node_wal::segment_path(std::uint64_t first_sequence) const {
    char name[32];
    std::snprintf(name, sizeof name, "%020llu.wal",
                  static_cast<unsigned long long>(first_sequence));
    return _options.dir / name;
}

wal_recovery node_wal::recover(const record_visitor& visit) {
    wal_recovery result;
    const auto segments = list_segments(_options.dir);
    std::unordered_map<std::uint32_t, std::uint64_t> last_index;
    for (std::size_t i = 0; i < segments.size(); ++i) {
        const auto& [first, path] = segments[i];
        const bool last_segment = i + 1 == segments.size();
        const std::string data = read_file(_io, path);
        std::size_t at = 0;
        const std::string_view magic = std::string_view(data).substr(0, wal_magic.size());
        const bool raft = magic == wal_magic;
        const bool watermarked = raft || magic == wal_magic_commands;
        const wal_payloads payloads = raft ? wal_payloads::raft_records : wal_payloads::commands;
        if (!watermarked && magic != wal_magic_without_watermarks) {
            if (last_segment && data.size() < wal_magic.size() &&
                (wal_magic.starts_with(data) || wal_magic_commands.starts_with(data) ||
                 wal_magic_without_watermarks.starts_with(data))) {
                // Crashed while creating the segment: nothing was written to it.
                if (_io.unlink(path.c_str()) != 0) {
                    throw std::runtime_error(errno_text("cannot remove", path));
                }
                result.torn_tail_cut = true;
                break;
            }
            throw wal_corruption("WAL segment " + path.string() + " has a bad header at offset 0");
        }
        at = wal_magic.size();
        std::uint64_t sequence = first;
        // A prepared segment ends in zeros its records have not reached.
        const std::size_t written_end = data.find_last_not_of('\0') + 1;
        while (at < written_end) {
            wal_record record;
            std::size_t used = 0;
            const auto st = decode_wal_record(std::string_view(data).substr(at), record, used);
            if (st != wal_decode_status::ok) {
                if (!last_segment || damage_is_corruption(data, at, written_end, watermarked)) {
                    throw wal_corruption("WAL corruption in " + path.string() + " at offset " +
                                         std::to_string(at) +
                                         ": the record there is damaged and the log went on "
                                         "after it was durable");
                }
                spdlog::warn("WAL {}: cutting a torn tail of {} bytes at offset {}", path.string(),
                             data.size() - at, at);
                cut_file(_io, path, at);
                result.torn_tail_cut = true;
                break;
            }
            const std::size_t record_at = at;
            result.bytes += used;
            at += used;
            if (record.group == wal_watermark_group) continue;
            auto& previous = last_index[record.group];
            if (payloads == wal_payloads::commands && record.index <= previous) {
                throw wal_corruption("WAL corruption in " + path.string() + " at offset " +
                                     std::to_string(record_at) + ": group " +
                                     std::to_string(record.group) + " index " +
                                     std::to_string(record.index) + " does not increase");
            }
            previous = record.index;
            note_written(first, record.group, record.index);
            visit(record.group, record.index, record.payload, payloads);
            ++result.records;
            ++sequence;
        }
        if (first != _next_sequence && i > 0) {
            if (sequence == first) {
                // No record: left by a switch that failed, whose removal a
                // crash undid. The records went on in the segment before it.
                spdlog::warn("WAL {}: removing an empty segment a failed switch left",
                             path.string());
                if (_io.unlink(path.c_str()) != 0) {
                    throw std::runtime_error(errno_text("cannot remove", path));
                }
                continue;
            }
            throw wal_corruption("WAL segment " + path.string() + " begins at record " +
                                 std::to_string(first) + " but the segment before it ends at " +
                                 std::to_string(_next_sequence));
        }
        ++result.segments;
        _metrics.segments.add(1);
        _metrics.bytes_on_disk.add(
            static_cast<std::int64_t>(result.torn_tail_cut && last_segment ? at : data.size()));
        _next_sequence = sequence;
        _recovered_end = at;
        _newest_is_current = raft;
    }
    _recovered = true;
    return result;
}

void node_wal::note_written(std::uint64_t segment, std::uint32_t group, std::uint64_t index) {
    std::lock_guard lock(_segments_mutex);
    auto& highest = _segments[segment][group];
    highest = std::max(highest, index);
}

void node_wal::release(std::uint32_t group, std::uint64_t index) {
    {
        std::lock_guard lock(_segments_mutex);
        auto& released = _released[group];
        released = std::max(released, index);
    }
    delete_covered_segments();
}

void node_wal::delete_covered_segments() {
    std::vector<std::uint64_t> doomed;
    {
        std::lock_guard lock(_segments_mutex);
        for (auto it = _segments.begin(); it != _segments.end();) {
            // Only a prefix of the log goes: recovery reads segments in order.
            if (it->first == _open_segment) break;
            bool covered = true;
            for (const auto& [group, highest] : it->second) {
                auto r = _released.find(group);
                if (r == _released.end() || r->second < highest) {
                    covered = false;
                    break;
                }
            }
            if (!covered) break;
            doomed.push_back(it->first);
            it = _segments.erase(it);
        }
    }
    for (const auto first : doomed) {
        const fs::path path = segment_path(first);
        struct stat st {};
        if (_io.stat(path.c_str(), &st) == 0 && _io.unlink(path.c_str()) == 0) {
            _metrics.segments.add(-1);
            _metrics.bytes_on_disk.add(-static_cast<std::int64_t>(st.st_size));
        }
        spdlog::debug("WAL segment {} covered by checkpoints: removed", first);
    }
}

fs::path node_wal::prepared_path() const { return _options.dir / "next-segment.prepared"; }

bool node_wal::take_prepared_segment(const fs::path& path) {
    {
        std::lock_guard lock(_prepared_mutex);
        if (!_prepared_ready) return false;
        _prepared_ready = false;
        _prepared_taken = true;
    }
    const bool renamed = _io.rename(prepared_path().c_str(), path.c_str()) == 0;
    if (!renamed) {
        spdlog::warn("WAL: cannot use the prepared segment: {}", std::strerror(errno));
    }
    {
        std::lock_guard lock(_prepared_mutex);
        _prepared_taken = false;
    }
    _prepared_wake.notify_all();
    return renamed;
}

int node_wal::open_segment(std::uint64_t first_sequence, std::optional<std::uint64_t> records_end) {
    const fs::path path = segment_path(first_sequence);
    const bool fresh = !records_end;
    const bool prepared = fresh && take_prepared_segment(path);
    // A new segment's name may be left by a switch that failed: no record went there.
    const int flags = fresh && !prepared ? O_CREAT | O_TRUNC : 0;
    const int fd = _io.open(path.c_str(), O_WRONLY | O_CLOEXEC | flags, 0644);
    if (fd < 0) {
        const int failure = errno;
        if (prepared) (void)_io.unlink(path.c_str());
        return failure;
    }
    struct stat st {};
    bool ok = _io.fstat(fd, &st) == 0;
    if (ok && fresh && !prepared) {
        ok = write_all(_io, fd, wal_magic) && _io.fdatasync(fd) == 0;
        st.st_size = static_cast<off_t>(wal_magic.size());
    }
    // Also for a segment found on disk: a crash may have come between its
    // creation and this fsync, and records written to it are durable only
    // once its name is.
    ok = ok && fsync_directory(_options.dir, _io);
    if (ok) {
        // No flush is in flight: the switch waited for them, with the write mutex held.
        std::lock_guard lock(_sync_mutex);
        if (const int failure = reopen_sync_descriptors(path); failure != 0) {
            ok = false;
            errno = failure;
        }
    }
    if (!ok) {
        const int failure = errno != 0 ? errno : EIO;
        _io.close(fd);
        // A segment that never took a record goes: it would be the last one
        // at the next start while the records went to the one before.
        if (fresh) {
            (void)_io.unlink(path.c_str());
            (void)fsync_directory(_options.dir, _io);
        }
        return failure;
    }
    if (_fd >= 0) retire_segment(_fd);
    _fd = fd;
    _segment_size = fresh ? wal_magic.size() : *records_end;
    if (fresh) {
        _metrics.segments.add(1);
        _file_size = 0;
    } else {
        _file_size = static_cast<std::uint64_t>(st.st_size);  // counted by recover()
    }
    note_file_size(static_cast<std::uint64_t>(st.st_size));
    std::lock_guard lock(_segments_mutex);
    _open_segment = first_sequence;
    _segments[first_sequence];
    return 0;
}

void node_wal::note_file_size(std::uint64_t size) {
    _metrics.bytes_on_disk.add(static_cast<std::int64_t>(size) -
                               static_cast<std::int64_t>(_file_size));
    _file_size = size;
}

void node_wal::retire_segment(int fd) {
    if (_options.preallocate) {
        {
            std::lock_guard lock(_prepared_mutex);
            _retired.push_back(fd);
        }
        _prepared_wake.notify_all();
        return;
    }
    drop_cached_pages(_io, fd);
    _io.close(fd);
}

void node_wal::prepare_loop() {
    become_background_thread("dstream-wal-seg");
    std::unique_lock lock(_prepared_mutex);
    while (true) {
        _prepared_wake.wait(lock, [this] {
            return _preparing_over || !_retired.empty() || (!_prepared_ready && !_prepared_taken);
        });
        // Before the next preparation, whose zeros then go to the pages
        // freed here (base/file_io.h); a stop also waits for them.
        if (!_retired.empty()) {
            const std::vector<int> retired = std::exchange(_retired, {});
            lock.unlock();
            for (const int fd : retired) {
                drop_cached_pages(_io, fd);
                _io.close(fd);
            }
            lock.lock();
            continue;
        }
        if (_preparing_over) return;
        lock.unlock();
        const bool made = prepare_segment();
        lock.lock();
        if (made && _preparing_failed) {
            spdlog::info("WAL: the next segment is prepared again");
        }
        _preparing_failed = !made && !_preparing_over;
        if (made) {
            _prepared_ready = true;
        } else {
            // A full or failing disk: switches make segments as they go
            // meanwhile, and the next try waits a while.
            _prepared_wake.wait_for(lock, std::chrono::seconds(1),
                                    [this] { return _preparing_over; });
        }
    }
}

bool node_wal::prepare_segment() {
    const fs::path path = prepared_path();
    const int fd = _io.open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    bool ok = fd >= 0 && write_all(_io, fd, wal_magic);
    // Static storage, never written: its pages stay the kernel's zero page,
    // which costs no resident memory.
    static std::array<char, 1u << 20> zeros;
    std::uint64_t size = wal_magic.size();
    // Flushed a few MiB at a time: one long flush would hold the log's own
    // behind it on the device.
    constexpr std::uint64_t flush_every = 4u << 20;
    while (ok && size < _options.segment_bytes) {
        {
            std::lock_guard lock(_prepared_mutex);
            if (_preparing_over) ok = false;
        }
        const auto piece = std::min<std::uint64_t>(zeros.size(), _options.segment_bytes - size);
        ok = ok && write_all(_io, fd, std::string_view(zeros.data(), piece));
        size += piece;
        if (ok && size % flush_every < piece) ok = _io.fdatasync(fd) == 0;
    }
    ok = ok && _io.fdatasync(fd) == 0;
    const int failure = ok ? 0 : errno;
    if (fd >= 0) _io.close(fd);
    if (!ok) {
        bool quiet = false;
        {
            std::lock_guard lock(_prepared_mutex);
            quiet = _preparing_over || _preparing_failed;  // stopping, or said already
        }
        if (!quiet) {
            spdlog::warn("WAL: cannot prepare the next segment ({}); segments grow as written",
                         std::strerror(failure));
        }
        (void)_io.unlink(path.c_str());
    }
    return ok;
}

int node_wal::reopen_sync_descriptors(const fs::path& path) {
    std::vector<int> fds;
    for (unsigned i = 0; i < std::max(1u, _options.sync_threads); ++i) {
        const int fd = _io.open(path.c_str(), O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
            const int failure = errno;
            for (const int opened : fds) _io.close(opened);
            return failure;
        }
        fds.push_back(fd);
    }
    for (const int fd : _sync_fds) _io.close(fd);
    _sync_fds = std::move(fds);
    return 0;
}

void node_wal::start() {
    // Append to the newest segment, or begin one.
    const auto segments = list_segments(_options.dir);
    if (!segments.empty() && !_recovered) {
        throw std::logic_error("the WAL must be recovered before it starts");
    }
    // Left by an earlier run, whole or not.
    if (_io.unlink(prepared_path().c_str()) != 0 && errno != ENOENT) {
        throw std::runtime_error(errno_text("cannot remove", prepared_path()));
    }
    // A segment of an older format is closed as it is: new records go to a
    // new segment, whose magic says what they are.
    const bool append = !segments.empty() && _newest_is_current;
    const std::uint64_t first = append ? segments.back().first : _next_sequence;
    const auto records_end = append ? std::optional<std::uint64_t>(_recovered_end) : std::nullopt;
    if (const int failure = open_segment(first, records_end); failure != 0) {
        errno = failure;
        throw std::runtime_error(errno_text("cannot open the WAL segment", segment_path(first)));
    }
    if (_options.preallocate) _preparer = std::thread([this] { prepare_loop(); });
    const unsigned threads = std::max(1u, _options.sync_threads);
    {
        std::lock_guard lock(_mutex);
        _busy = threads;
    }
    for (unsigned i = 0; i < threads; ++i) {
        _threads.emplace_back([this, i] { commit_loop(i); });
    }
}

void node_wal::stop() {
    {
        std::lock_guard lock(_mutex);
        if (_stopping) return;
        _stopping = true;
    }
    {
        std::lock_guard lock(_sync_mutex);
        _flush_turns_over = true;
    }
    _wake.notify_all();
    _stagger_wait.notify_all();
    for (auto& t : _threads) t.join();
    _threads.clear();
    {
        std::lock_guard lock(_prepared_mutex);
        _preparing_over = true;
    }
    _prepared_wake.notify_all();
    if (_preparer.joinable()) _preparer.join();
}

void node_wal::submit(std::uint32_t group, std::uint64_t index, wal_payload payload,
                      wal_sink* sink, std::uint64_t token) {
    // Records behind the first find a thread already woken for it, or busy:
    // each looks at the queue before it sleeps. One wake per batch; but a
    // queue left to a flush's thread is looked at again, as that flush may
    // since have run past its turn.
    const queue_state state = enqueue(group, index, std::move(payload), sink, token);
    if (state.was_empty || _queue_left_to_flush.load(std::memory_order_relaxed)) {
        wake_for_queue(state);
    }
}

void node_wal::submit_quietly(std::uint32_t group, std::uint64_t index, wal_payload payload,
                              wal_sink* sink, std::uint64_t token) {
    enqueue(group, index, std::move(payload), sink, token);
}

void node_wal::wake() {
    queue_state state;
    {
        std::lock_guard lock(_mutex);
        if (_queue.empty()) return;
        state.none_busy = _busy == 0;
    }
    wake_for_queue(state);
}

void node_wal::wake_for_queue(queue_state state) {
    if (state.none_busy) {
        _wake.notify_one();
        return;
    }
    {
        // A busy WAL thread looks at the queue before it sleeps: another is
        // woken only to flush beside a flush in flight, once that one has
        // run past its turn. Where flushes often run that long, one waits
        // for the turn (wait_for_flush_turn), unless one waits already.
        // Where they seldom do, none waits: it would mostly wake to find the
        // flush over and take the queue from that flush's thread, each batch
        // costing a thread's wake and sleep more.
        std::lock_guard lock(_sync_mutex);
        if (_syncs_in_flight == 0 || _waiting_turn > 0) return;
        const bool past_turn =
            std::chrono::steady_clock::now() >= _newest_flush_start + _options.flush_stagger;
        if (!past_turn && _flushes_past_turn < 0.25) {
            _queue_left_to_flush.store(true, std::memory_order_relaxed);
            return;
        }
    }
    _queue_left_to_flush.store(false, std::memory_order_relaxed);
    _wake.notify_one();
}

node_wal::queue_state node_wal::enqueue(std::uint32_t group, std::uint64_t index,
                                        wal_payload payload, wal_sink* sink, std::uint64_t token) {
    // The checksum outside the lock the WAL threads take the queue with.
    const wal_record_header header =
        make_wal_record_header(group, index, payload.own, payload.shared.view());
    std::lock_guard lock(_mutex);
    const queue_state state{_queue.empty(), _busy == 0};
    _queue.push_back(entry{header, group, index, std::move(payload), sink, token});
    return state;
}

status node_wal::write_batch(const std::vector<entry>& batch) {
    const std::uint64_t before = _segment_size;
    wal_record_header watermark{};
    {
        // Only flushes that returned count: recovery may take whatever the
        // watermark covers for acknowledged.
        std::lock_guard lock(_sync_mutex);
        watermark =
            make_wal_record_header(wal_watermark_group, before - (_written_pos - _durable_pos), {});
    }
    // Header and payload of every record, written in place (no batch copy).
    std::vector<iovec> iov;
    iov.reserve(batch.size() * 3 + 1);
    iov.push_back(iovec{watermark.data(), watermark.size()});
    std::uint64_t bytes = watermark.size();
    for (const auto& e : batch) {
        iov.push_back(iovec{const_cast<char*>(e.header.data()), e.header.size()});
        iov.push_back(iovec{const_cast<char*>(e.payload.own.data()), e.payload.own.size()});
        if (!e.payload.shared.empty()) {
            iov.push_back(iovec{const_cast<char*>(e.payload.shared.data), e.payload.shared.size});
        }
        bytes += e.header.size() + e.payload.size();
    }
    int failure = 0;
    std::size_t first = 0;
    std::uint64_t at = before;
    while (first < iov.size()) {
        const int count = static_cast<int>(std::min<std::size_t>(iov.size() - first, IOV_MAX));
        ssize_t n = _io.pwritev(_fd, iov.data() + first, count, static_cast<off_t>(at));
        if (n < 0) {
            if (errno == EINTR) continue;
            failure = errno;
            break;
        }
        at += static_cast<std::uint64_t>(n);
        // Skip what was written; a partial write leaves the rest of an iovec.
        while (n > 0 && first < iov.size()) {
            const auto take =
                std::min<std::size_t>(static_cast<std::size_t>(n), iov[first].iov_len);
            iov[first].iov_base = static_cast<char*>(iov[first].iov_base) + take;
            iov[first].iov_len -= take;
            n -= static_cast<ssize_t>(take);
            if (iov[first].iov_len == 0) ++first;
        }
        while (first < iov.size() && iov[first].iov_len == 0) ++first;
    }
    if (failure == 0) {
        _segment_size += bytes;
        note_file_size(std::max(_file_size, _segment_size));
        return ok_status();
    }
    _metrics.write_errors.inc();
    // Nothing of a failed batch may stay in the log: a later batch would
    // follow it and recovery would take the damage for corruption.
    if (_io.ftruncate(_fd, static_cast<off_t>(before)) != 0) {
        spdlog::critical("WAL: cannot cut a failed write back ({}); stopping",
                         std::strerror(errno));
        std::abort();
    }
    note_file_size(before);
    spdlog::error("WAL write failed: {}", std::strerror(failure));
    return disk_pressure();
}

void node_wal::flush(flush_due due) {
    const metrics::stopwatch fsync;
    const int failure = _io.fdatasync(due.fd) == 0 ? 0 : errno;
    const std::chrono::microseconds took(fsync.elapsed_us());
    _metrics.fsync_us.observe(static_cast<std::uint64_t>(took.count()));
    {
        std::lock_guard lock(_sync_mutex);
        --_syncs_in_flight;
        _flushes_past_turn +=
            ((took >= _options.flush_stagger ? 1.0 : 0.0) - _flushes_past_turn) / 8;
        if (failure == 0) {
            _durable_pos = std::max(_durable_pos, due.target);
        } else if (_sync_failure == 0) {
            _sync_failure = failure;
        }
    }
    _synced.notify_all();
    if (failure != 0) {
        // Refuses what the flush covered now, not when the next write comes.
        std::lock_guard write(_write_mutex);
        recover_from_failed_sync();
    }
}

void node_wal::deliver_durable() {
    std::lock_guard deliver(_deliver_mutex);
    std::vector<written_batch> ready;
    {
        std::lock_guard lock(_sync_mutex);
        while (!_written.empty() && _written.front().end <= _durable_pos) {
            ready.push_back(std::move(_written.front()));
            _written.pop_front();
        }
    }
    for (const auto& batch : ready) {
        for (const auto& [sink, token] : batch.notices) sink->on_written(token, batch.outcome);
    }
}

void node_wal::wait_all_durable() {
    std::unique_lock lock(_sync_mutex);
    _synced.wait(lock, [this] {
        return _sync_failure != 0 || (_durable_pos == _written_pos && _syncs_in_flight == 0);
    });
}

void node_wal::recover_from_failed_sync() {
    std::unique_lock lock(_sync_mutex);
    if (_sync_failure == 0) return;
    _synced.wait(lock, [this] { return _syncs_in_flight == 0; });
    const std::uint64_t unflushed = _written_pos - _durable_pos;
    // Through new descriptors: the old ones would report the flush's error
    // again (once per open file), the write descriptor's as a failure of the
    // cut, the flush descriptors' as failures of later flushes.
    const fs::path path = segment_path(_open_segment);
    const int fd = _io.open(path.c_str(), O_WRONLY | O_CLOEXEC);
    if (fd < 0 || _io.ftruncate(fd, static_cast<off_t>(_segment_size - unflushed)) != 0 ||
        _io.fdatasync(fd) != 0 || reopen_sync_descriptors(path) != 0) {
        spdlog::critical("WAL: cannot cut unflushed writes back ({}); stopping",
                         std::strerror(errno));
        std::abort();
    }
    _io.close(_fd);
    _fd = fd;
    spdlog::error("WAL flush failed: {}; {} unflushed bytes cut and their writes refused",
                  std::strerror(_sync_failure), unflushed);
    _segment_size -= unflushed;
    note_file_size(_segment_size);
    const status failed = disk_pressure();
    for (auto& batch : _written) {
        if (batch.end > _durable_pos) {
            batch.end = _durable_pos;
            batch.outcome = failed;
            // Segment names count the records before them in the log.
            _next_sequence -= batch.records;
            batch.records = 0;
        }
    }
    _written_pos = _durable_pos;
    _sync_failure = 0;
}

void node_wal::commit_loop(std::size_t slot) {
    become_background_thread("dstream-wal");
    std::vector<entry> batch;
    while (true) {
        {
            // Busy from here until it finds the queue empty (under this
            // lock): records queued meanwhile need no wake.
            std::unique_lock lock(_mutex);
            --_busy;
            _wake.wait(lock, [this] { return !_queue.empty() || _stopping; });
            if (_queue.empty()) return;  // stopping, and every record taken
            ++_busy;
        }
        wait_for_flush_turn();
        if (const auto due = write_queued(batch, slot)) flush(*due);
        batch.clear();
        deliver_durable();
    }
}

void node_wal::wait_for_flush_turn() {
    std::unique_lock lock(_sync_mutex);
    while (_syncs_in_flight > 0 && !_flush_turns_over) {
        const auto turn = _newest_flush_start + _options.flush_stagger;
        if (std::chrono::steady_clock::now() >= turn) return;
        // Not woken when the flush ends: its own thread takes the queue then.
        ++_waiting_turn;
        _stagger_wait.wait_until(lock, turn);
        --_waiting_turn;
    }
}

std::optional<node_wal::flush_due> node_wal::write_queued(std::vector<entry>& batch,
                                                          std::size_t slot) {
    std::lock_guard write(_write_mutex);
    {
        std::lock_guard lock(_mutex);
        batch.swap(_queue);
        _queue_left_to_flush.store(false, std::memory_order_relaxed);
    }
    if (batch.empty()) return std::nullopt;  // another thread took the queue first
    // A flush failed and its thread waits for this mutex: cut first, so that
    // this batch does not follow the lost bytes and fall with them.
    recover_from_failed_sync();
    std::uint64_t batch_bytes = wal_record_header_bytes;  // the watermark
    for (const auto& e : batch) batch_bytes += e.header.size() + e.payload.size();
    written_batch written;
    if (_segment_size > wal_magic.size() && _segment_size + batch_bytes > _options.segment_bytes) {
        // A segment is closed only once flushed whole: flushes never span two
        // files, and recovery sees a torn tail only in the last. The flushes
        // waited for need nothing this thread holds: every write counts its
        // flush in flight before it lets go of the write mutex.
        wait_all_durable();
        recover_from_failed_sync();
        if (const int failure = open_segment(_next_sequence, std::nullopt); failure != 0) {
            // The batch is refused; the next one tries a new segment again.
            _metrics.write_errors.inc();
            spdlog::error("WAL: cannot begin segment {}: {}", segment_path(_next_sequence).string(),
                          std::strerror(failure));
            written.outcome = disk_pressure();
        }
    }
    _metrics.batch_records.observe(batch.size());
    _metrics.batch_bytes.observe(batch_bytes);
    if (written.outcome) written.outcome = write_batch(batch);
    const bool wrote = written.outcome.ok();
    if (wrote) {
        _next_sequence += batch.size();
        written.records = batch.size();
        for (const auto& e : batch) note_written(_open_segment, e.group, e.index);
    }
    for (const auto& e : batch) {
        auto it = std::find_if(written.notices.begin(), written.notices.end(),
                               [&](const auto& n) { return n.first == e.sink; });
        if (it == written.notices.end()) {
            written.notices.emplace_back(e.sink, e.token);
        } else {
            it->second = e.token;
        }
    }
    std::lock_guard lock(_sync_mutex);
    if (wrote) _written_pos += batch_bytes;
    written.end = _written_pos;
    _written.push_back(std::move(written));
    // After a failed flush the batch waits for the cut, which refuses it:
    // the thread whose flush failed makes it once this one lets go.
    if (!wrote || _sync_failure != 0) return std::nullopt;
    ++_syncs_in_flight;
    _newest_flush_start = std::chrono::steady_clock::now();
    return flush_due{_sync_fds[slot], _written_pos};
}

}  // namespace dstream::log
