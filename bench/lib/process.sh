# Shell functions the benchmark scripts share; sourced, not run.

# free_port [HOST]: a TCP port of HOST (default 127.0.0.1) the kernel had
# free a moment ago. A server started on it may still lose it to another;
# the callers' readiness checks catch that.
# shellcheck disable=SC2120  # the host is optional
free_port() {
    python3 -c 'import socket,sys; s=socket.socket(); s.bind((sys.argv[1],0)); print(s.getsockname()[1])' \
        "${1:-127.0.0.1}"
}

# stop_process PID: SIGTERM, up to 5 s to exit, then SIGKILL; reaps it when
# it is a child of this shell. Nothing to do for an empty or dead PID.
stop_process() {
    local pid=$1
    [[ -n "$pid" ]] || return 0
    if kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$pid" 2>/dev/null || true
    fi
    wait "$pid" 2>/dev/null || true
}

# retire_data_dir DIR: a finished run's data directory, left for the
# script's exit to delete with the rest of its work directory; deleted now
# only when its filesystem has less than BENCH_MIN_FREE_GIB (default 8) GiB
# free, with a warning. Deleting it between runs would slow the next durable
# server: on ext4 without a journal (this project's VM) the kernel's inode
# allocator passes over every inode freed in the last minute or more, one
# buffer lookup each, so after a durable run's few thousand files were
# deleted each mkdir and create of the next took 40-150 µs, and its I/O
# pool 0.7-1.2 µs more per append (docs/benchmarks.md, "What each change
# measured").
retire_data_dir() {
    local dir=$1 free_kib
    free_kib=$(df -Pk "$dir" | awk 'NR == 2 { print $4 }')
    if [[ "$free_kib" =~ ^[0-9]+$ ]] && ((free_kib < ${BENCH_MIN_FREE_GIB:-8} * 1024 * 1024)); then
        echo "bench: less than ${BENCH_MIN_FREE_GIB:-8} GiB free: deleting $dir now, which slows file creation in the next run" >&2
        rm -rf "$dir"
    fi
}
