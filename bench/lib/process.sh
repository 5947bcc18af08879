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
