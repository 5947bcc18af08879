#!/usr/bin/env bash
# dstream against the reference server (@durable-streams/server, the Node.js
# implementation), side by side, with one dstream-bench scenario.
#
#   bench/compare.sh [--scenario append|fanout|catchup|longpoll]
#                    [--duration S] [--warmup S] [--pairs N] [--quick]
#                    [--surface v1|bucket] [--servers LIST] [--threads N]
#                    [--ref-file-handles N] [--hot-bytes N] [--io-threads N]
#                    [--perf-stat] [--pin SERVER_CPUS:GENERATOR_CPUS]
#                    [--dstream PATH] [--bench PATH] [--out DIR]
#     append:   [--streams N] [--connections C] [--body-bytes B] [--producer]
#     fanout:   [--subscribers M] [--rate R] [--body-bytes B] [--writers W]
#     longpoll: [--streams N] [--rate R] [--body-bytes B] [--writers W]
#     catchup:  [--stream-bytes S] [--readers R] [--repeat K] [--append-bytes A] [--settle S]
#
# --hot-bytes N gives the durable dstream servers that hot tier (their
# default is 256 MiB): with a small one, and --settle S seconds between the
# fill and the reads, a catch-up reads cold chunks, not memory.
#
# --threads N is the generator's; --io-threads N starts every dstream server
# with --threads N (its I/O threads; without it, the server's default) and
# nginx-floor with N worker processes (without it, one process), each with
# its own event loop, so that the floor runs as many as dstream does.
# fanout-floor is one thread whatever N is.
#
# --pin SERVER_CPUS:GENERATOR_CPUS (taskset lists, e.g. 1:0) runs every
# server on the first CPUs and the generator on the second: on a machine
# whose CPUs run at different speeds (bench/README.md, cpu-speed), every
# server of a round then runs on the same ones, as a one-thread server and
# its floor otherwise may not.
#
# --out DIR keeps results.jsonl (one dstream-bench JSON line per run) and
# report.md there.
#
# --perf-stat counts the server's system calls and context switches with
# `perf stat -p` (Debian's linux-perf, installed when missing; needs root or
# a low kernel.perf_event_paranoid): in the timed scenarios from warm-up +
# 0.5 s after the generator starts, for the window less 1 s; in catchup over
# the reads. The table adds them per operation (append, delivery, MB): the
# counts divided by the JSON line's rate times the seconds perf counted.
#
# Four servers, each started fresh on a free 127.0.0.1 port for every run and
# stopped after it:
#   reference-file    reference server, file-backed (dataDir in a temp dir)
#   dstream-durable   build/dstream serve --data-dir TEMP (write-ahead log)
#   reference-memory  reference server, in memory
#   dstream-memory    build/dstream serve --memory
# and, when asked for in --servers:
#   dstream-s3        dstream-durable with its cold tier in the harness's
#                     bucket (--cold-store s3://BUCKET/bench --s3-endpoint ...;
#                     run under tests/s3/with_s3rver.sh)
#   nginx-floor       the floor of one HTTP exchange (append only): Debian's
#                     nginx, installed when missing, as one process (or
#                     --io-threads workers, their CPU summed) answering
#                     PUT 201 / POST 204 with Stream-Next-Offset and doing
#                     nothing else (bench/nginx_floor.conf); the table gives
#                     dstream's figures as ratios to it, e.g.
#                     --servers nginx-floor,dstream-memory,dstream-durable
#   fanout-floor      the floor of one SSE delivery (fanout only):
#                     bench/load/fanout_floor.cc, one thread sending each
#                     append's ready-made event to every subscriber in one
#                     send() and doing nothing else; built beside
#                     dstream-bench; dstream's figures as ratios to it, e.g.
#                     --scenario fanout --servers fanout-floor,dstream-memory,dstream-durable
# Every round runs them in that order (reference and dstream alternate); the
# table reports medians over --pairs rounds (default 3) and the ratios
# dstream-durable / reference-file and dstream-durable / reference-memory.
#
# Scenarios (bench/README.md has the details):
#   append    (default) POST throughput: 500 streams, 64 connections, 1 KiB bodies
#   fanout    SSE delivery: 1000 subscribers of one stream, 100 messages/s of 256 B
#   longpoll  long-poll delivery: 500 streams with a reader each, 2 messages/s each
#   catchup   catch-up reads: 4 readers of one 256 MiB stream, every byte checked
#             (untimed fill first; --duration and --warmup do not apply)
# Defaults: 2 s warm-up, 10 s window, v1 URL layout (/v1/stream/ID) for both
# servers so the requests are byte-for-byte the same (the reference server
# accepts any path; dstream also serves --surface bucket). --quick: 1 round
# of 3 s after 1 s warm-up (catchup: a 64 MiB stream). The bootstrap
# scenario is dstream's alone (the reference has no snapshots): run
# dstream-bench bootstrap directly.
#
# The reference file-backed store keeps at most 100 open segment files; with
# more streams in use at once some appends fail with 404 "Stream not found"
# (a handle evicted between write and fsync). The table counts them as
# errors; --ref-file-handles N (e.g. 1000) runs it with a larger pool instead.
#
# dstream-bench: --bench PATH, else build/dstream-bench, else built from
# bench/load on its own into ${DSTREAM_BENCH_BUILD:-/tmp/dstream-bench-build}.
# The reference server comes from tests/conformance/node_modules (npm ci there
# when missing).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib/process.sh
source "$ROOT/bench/lib/process.sh"
COMMAND=$(printf '%q ' "$0" "$@")
COMMAND=${COMMAND% }

SCENARIO=append
DURATION=10
WARMUP=2
PAIRS=3
QUICK=0
# Scenario parameters; empty ones take the scenario's default below.
STREAMS=""
CONNECTIONS=64
BODY_BYTES=""
SUBSCRIBERS=1000
RATE=""
WRITERS=16
STREAM_BYTES=""
APPEND_BYTES=4194304
READERS=4
REPEAT=1
THREADS=1
PRODUCER=0
SURFACE=v1
SERVERS="reference-file,dstream-durable,reference-memory,dstream-memory"
DSTREAM_BIN="$ROOT/build/dstream"
BENCH_BIN=""
OUT=""
REF_FILE_HANDLES=""
HOT_BYTES=""
IO_THREADS=""
PIN=""
SETTLE=0
PERF_STAT=0

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}

need_value() { [[ $# -ge 2 && -n "$2" ]] || { echo "compare: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --scenario) need_value "$@"; SCENARIO=$2; shift 2 ;;
        --subscribers) need_value "$@"; SUBSCRIBERS=$2; shift 2 ;;
        --rate) need_value "$@"; RATE=$2; shift 2 ;;
        --writers) need_value "$@"; WRITERS=$2; shift 2 ;;
        --stream-bytes) need_value "$@"; STREAM_BYTES=$2; shift 2 ;;
        --append-bytes) need_value "$@"; APPEND_BYTES=$2; shift 2 ;;
        --readers) need_value "$@"; READERS=$2; shift 2 ;;
        --repeat) need_value "$@"; REPEAT=$2; shift 2 ;;
        --duration) need_value "$@"; DURATION=$2; shift 2 ;;
        --warmup) need_value "$@"; WARMUP=$2; shift 2 ;;
        --pairs) need_value "$@"; PAIRS=$2; shift 2 ;;
        --streams) need_value "$@"; STREAMS=$2; shift 2 ;;
        --connections) need_value "$@"; CONNECTIONS=$2; shift 2 ;;
        --body-bytes) need_value "$@"; BODY_BYTES=$2; shift 2 ;;
        --threads) need_value "$@"; THREADS=$2; shift 2 ;;
        --surface) need_value "$@"; SURFACE=$2; shift 2 ;;
        --servers) need_value "$@"; SERVERS=$2; shift 2 ;;
        --dstream) need_value "$@"; DSTREAM_BIN=$2; shift 2 ;;
        --bench) need_value "$@"; BENCH_BIN=$2; shift 2 ;;
        --out) need_value "$@"; OUT=$2; shift 2 ;;
        --ref-file-handles) need_value "$@"; REF_FILE_HANDLES=$2; shift 2 ;;
        --hot-bytes) need_value "$@"; HOT_BYTES=$2; shift 2 ;;
        --io-threads) need_value "$@"; IO_THREADS=$2; shift 2 ;;
        --pin) need_value "$@"; PIN=$2; shift 2 ;;
        --settle) need_value "$@"; SETTLE=$2; shift 2 ;;
        --producer) PRODUCER=1; shift ;;
        --perf-stat) PERF_STAT=1; shift ;;
        --quick) QUICK=1; PAIRS=1; DURATION=3; WARMUP=1; shift ;;
        -h | --help) usage ;;
        *) echo "compare: unknown argument '$1'" >&2; usage ;;
    esac
done

case "$SCENARIO" in
    append) : "${STREAMS:=500}" "${BODY_BYTES:=1024}" ;;
    fanout) : "${BODY_BYTES:=256}" "${RATE:=100}" ;;
    longpoll) : "${STREAMS:=500}" "${BODY_BYTES:=256}" "${RATE:=2}" ;;
    catchup)
        if [[ $QUICK -eq 1 ]]; then : "${STREAM_BYTES:=67108864}"; else : "${STREAM_BYTES:=268435456}"; fi
        ;;
    *) echo "compare: --scenario is append, fanout, catchup or longpoll (bootstrap is dstream's alone)" >&2; exit 2 ;;
esac
# --name of a variable: BODY_BYTES -> --body-bytes.
flag() { local f=${1,,}; echo "--${f//_/-}"; }
for n in PAIRS CONNECTIONS SUBSCRIBERS WRITERS APPEND_BYTES READERS REPEAT THREADS; do
    [[ "${!n}" =~ ^[1-9][0-9]*$ ]] || { echo "compare: $(flag $n) must be a positive integer" >&2; exit 2; }
done
for n in DURATION WARMUP SETTLE; do
    [[ "${!n}" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "compare: $(flag $n) must be a number of seconds" >&2; exit 2; }
done
for n in STREAMS BODY_BYTES STREAM_BYTES IO_THREADS; do
    [[ -z "${!n}" || "${!n}" =~ ^[1-9][0-9]*$ ]] || { echo "compare: $(flag $n) must be a positive integer" >&2; exit 2; }
done
[[ -z "$RATE" || "$RATE" =~ ^[0-9]+([.][0-9]+)?$ ]] || { echo "compare: --rate must be a number of messages per second" >&2; exit 2; }
[[ -z "$REF_FILE_HANDLES" || "$REF_FILE_HANDLES" =~ ^[1-9][0-9]*$ ]] || { echo "compare: --ref-file-handles must be a positive integer" >&2; exit 2; }
[[ -z "$HOT_BYTES" || "$HOT_BYTES" =~ ^[1-9][0-9]*$ ]] || { echo "compare: --hot-bytes must be a positive integer (bytes)" >&2; exit 2; }
[[ "$PAIRS" -le 50 ]] || { echo "compare: --pairs is capped at 50" >&2; exit 2; }
# Prefixes of the servers' and the generator's command lines.
SERVER_PIN=()
GENERATOR_PIN=()
if [[ -n "$PIN" ]]; then
    [[ "$PIN" =~ ^([0-9,-]+):([0-9,-]+)$ ]] ||
        { echo "compare: --pin is SERVER_CPUS:GENERATOR_CPUS, taskset lists such as 1:0" >&2; exit 2; }
    SERVER_PIN=(taskset -c "${BASH_REMATCH[1]}")
    GENERATOR_PIN=(taskset -c "${BASH_REMATCH[2]}")
fi
[[ "$SURFACE" == v1 || "$SURFACE" == bucket ]] || { echo "compare: --surface is v1 or bucket" >&2; exit 2; }
IFS=, read -r -a SERVER_LIST <<<"$SERVERS"
for s in "${SERVER_LIST[@]}"; do
    case "$s" in
        reference-file | reference-memory | dstream-durable | dstream-memory) ;;
        dstream-s3)
            [[ -n "${DSTREAM_TEST_S3_ENDPOINT:-}" ]] ||
                { echo "compare: dstream-s3 needs an S3 endpoint: run under tests/s3/with_s3rver.sh" >&2; exit 2; } ;;
        nginx-floor)
            [[ "$SCENARIO" == append ]] ||
                { echo "compare: nginx-floor answers appends only (--scenario append)" >&2; exit 2; } ;;
        fanout-floor)
            [[ "$SCENARIO" == fanout ]] ||
                { echo "compare: fanout-floor serves SSE subscribers only (--scenario fanout)" >&2; exit 2; } ;;
        *) echo "compare: unknown server '$s' in --servers" >&2; exit 2 ;;
    esac
done

command -v node >/dev/null || { echo "compare: node is not installed (run scripts/install-deps)" >&2; exit 1; }
NGINX_BIN=""
if [[ ",$SERVERS," == *,nginx-floor,* ]]; then
    if ! command -v nginx >/dev/null && [[ ! -x /usr/sbin/nginx ]]; then
        echo "compare: installing Debian's nginx for nginx-floor" >&2
        sudo_cmd=()
        [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo -n)
        "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends nginx >&2
    fi
    NGINX_BIN=$(command -v nginx || echo /usr/sbin/nginx)
fi
command -v curl >/dev/null || { echo "compare: curl is not installed (run scripts/install-deps)" >&2; exit 1; }

# What --perf-stat counts: the calls of the table's columns (bench/load/perf-counts.mjs
# groups them), all calls, and context switches.
PERF_EVENTS=syscalls:sys_enter_futex,syscalls:sys_enter_recvfrom,syscalls:sys_enter_recvmsg,syscalls:sys_enter_read
PERF_EVENTS+=,syscalls:sys_enter_sendto,syscalls:sys_enter_sendmsg,syscalls:sys_enter_write,syscalls:sys_enter_writev
PERF_EVENTS+=,syscalls:sys_enter_sendfile64,syscalls:sys_enter_epoll_wait,syscalls:sys_enter_epoll_pwait
PERF_EVENTS+=,syscalls:sys_enter_epoll_pwait2,raw_syscalls:sys_enter,context-switches
if [[ $PERF_STAT -eq 1 ]]; then
    if [[ $SCENARIO != catchup ]] && ! awk -v d="$DURATION" 'BEGIN { exit !(d >= 2) }'; then
        echo "compare: --perf-stat counts the window less 1 s: --duration must be at least 2" >&2
        exit 2
    fi
    if ! command -v perf >/dev/null; then
        echo "compare: installing Debian's linux-perf for --perf-stat" >&2
        sudo_cmd=()
        [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo -n)
        "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends linux-perf >&2
    fi
    # Attach once to a process of our own, as every run will attach to its server.
    sleep 5 &
    probe=$!
    if ! probe_error=$(perf stat -x, -e "$PERF_EVENTS" -p "$probe" -- sleep 0.1 2>&1 >/dev/null); then
        kill "$probe" 2>/dev/null || true
        echo "compare: --perf-stat: perf stat cannot count system calls of another process here" \
            "(kernel.perf_event_paranoid is $(cat /proc/sys/kernel/perf_event_paranoid 2>/dev/null || echo unknown);" \
            "syscall tracepoints need root, or perf_event_paranoid -1 and a readable /sys/kernel/tracing). perf said:" >&2
        sed 's/^/    /' <<<"$probe_error" >&2
        exit 1
    fi
    kill "$probe" 2>/dev/null || true
    wait "$probe" 2>/dev/null || true
fi

uses_dstream=0
uses_reference=0
for s in "${SERVER_LIST[@]}"; do
    [[ "$s" == dstream-* ]] && uses_dstream=1
    [[ "$s" == reference-* ]] && uses_reference=1
done

if [[ $uses_dstream -eq 1 && ! ( -x "$DSTREAM_BIN" && -s "$DSTREAM_BIN" ) ]]; then
    echo "compare: '$DSTREAM_BIN' is missing or not executable; build it (cmake --build --preset default) or pass --dstream PATH" >&2
    exit 1
fi

# The load generator.
if [[ -z "$BENCH_BIN" ]]; then
    if [[ -x "$ROOT/build/dstream-bench" ]]; then
        BENCH_BIN="$ROOT/build/dstream-bench"
    else
        BUILD=${DSTREAM_BENCH_BUILD:-${TMPDIR:-/tmp}/dstream-bench-build}
        echo "compare: building dstream-bench in $BUILD" >&2
        if [[ ! -f "$BUILD/CMakeCache.txt" ]]; then
            cmake -S "$ROOT/bench/load" -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release >/dev/null
        fi
        cmake --build "$BUILD" >/dev/null
        BENCH_BIN="$BUILD/dstream-bench"
    fi
fi
[[ -x "$BENCH_BIN" ]] || { echo "compare: load generator '$BENCH_BIN' is not executable" >&2; exit 1; }
# Built with dstream-bench (bench/load/CMakeLists.txt), so found beside it.
FANOUT_FLOOR_BIN="$(dirname "$BENCH_BIN")/fanout-floor"
if [[ ",$SERVERS," == *,fanout-floor,* && ! -x "$FANOUT_FLOOR_BIN" ]]; then
    echo "compare: '$FANOUT_FLOOR_BIN' is missing; build it beside dstream-bench" \
        "(cmake --build --preset default --target fanout-floor, or the bench/load build of --bench)" >&2
    exit 1
fi

# The reference server's package (pinned in tests/conformance/package.json).
CONF="$ROOT/tests/conformance"
if [[ $uses_reference -eq 1 && ! -d "$CONF/node_modules/@durable-streams/server" ]]; then
    echo "compare: installing the reference server (npm ci in tests/conformance)" >&2
    (cd "$CONF" && npm ci --no-audit --no-fund --loglevel=error)
fi
REF_VERSION=$(node -e 'try { const p = require(process.argv[1]); console.log(p.name + "@" + p.version) } catch { console.log("n/a") }' \
    "$CONF/node_modules/@durable-streams/server/package.json")

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dstream-compare.XXXXXX")
RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
SERVER_PID=""
BENCH_PID=""
PERF_PID=""

stop_server() {
    stop_process "$SERVER_PID"
    SERVER_PID=""
}

# shellcheck disable=SC2317  # invoked from the EXIT trap
cleanup() {
    local rc=$?
    if [[ -n "$BENCH_PID" ]] && kill -0 "$BENCH_PID" 2>/dev/null; then
        kill -TERM "$BENCH_PID" 2>/dev/null || true
        wait "$BENCH_PID" 2>/dev/null || true
    fi
    if [[ -n "$PERF_PID" ]] && kill -0 "$PERF_PID" 2>/dev/null; then
        kill -INT "$PERF_PID" 2>/dev/null || true
        wait "$PERF_PID" 2>/dev/null || true
    fi
    stop_server
    if [[ -n "$OUT" && -s "$RESULTS" ]]; then
        if mkdir -p "$OUT"; then
            cp "$RESULTS" "$OUT/results.jsonl" || true
            [[ -s "$WORK/report.md" ]] && { cp "$WORK/report.md" "$OUT/report.md" || true; }
        fi
    fi
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

now_us() { echo "${EPOCHREALTIME/[.,]/}"; }

# start_server NAME DIR PORT: starts it in the background, sets SERVER_PID,
# waits up to 15 s for an HTTP answer.
start_server() {
    local name=$1 dir=$2 port=$3
    local log="$dir/server.log"
    local hot=()
    [[ -n "$HOT_BYTES" ]] && hot=(--hot-bytes "$HOT_BYTES")
    local io=()
    [[ -n "$IO_THREADS" ]] && io=(--threads "$IO_THREADS")
    mkdir -p "$dir/data"
    case "$name" in
        reference-memory) "${SERVER_PIN[@]}" node "$ROOT/bench/load/reference-server.mjs" --port "$port" >"$log" 2>&1 & ;;
        reference-file)
            local extra=()
            [[ -n "$REF_FILE_HANDLES" ]] && extra=(--max-file-handles "$REF_FILE_HANDLES")
            "${SERVER_PIN[@]}" node "$ROOT/bench/load/reference-server.mjs" --port "$port" --data-dir "$dir/data" "${extra[@]}" >"$log" 2>&1 &
            ;;
        dstream-durable) "${SERVER_PIN[@]}" "$DSTREAM_BIN" serve --listen "127.0.0.1:$port" --admin-listen off --data-dir "$dir/data" "${hot[@]}" "${io[@]}" >"$log" 2>&1 & ;;
        dstream-memory) "${SERVER_PIN[@]}" "$DSTREAM_BIN" serve --listen "127.0.0.1:$port" --admin-listen off --data-dir "$dir/data" --memory "${io[@]}" >"$log" 2>&1 & ;;
        dstream-s3)
            "${SERVER_PIN[@]}" "$DSTREAM_BIN" serve --listen "127.0.0.1:$port" --admin-listen off --data-dir "$dir/data" "${hot[@]}" "${io[@]}" \
                --cold-store "s3://$DSTREAM_TEST_S3_BUCKET/bench" --s3-endpoint "$DSTREAM_TEST_S3_ENDPOINT" >"$log" 2>&1 &
            ;;
        nginx-floor)
            local workers=${IO_THREADS:-1} master=off
            ((workers > 1)) && master=on
            sed -e "s|@PORT@|$port|g" -e "s|@DIR@|$dir|g" -e "s|@MASTER@|$master|" \
                -e "s|@WORKERS@|$workers|" "$ROOT/bench/nginx_floor.conf" >"$dir/nginx.conf"
            "${SERVER_PIN[@]}" "$NGINX_BIN" -p "$dir" -c "$dir/nginx.conf" >"$log" 2>&1 &
            ;;
        fanout-floor) "${SERVER_PIN[@]}" "$FANOUT_FLOOR_BIN" --listen "127.0.0.1:$port" >"$log" 2>&1 & ;;
    esac
    SERVER_PID=$!
    local deadline=$(($(now_us) + 15000000))
    until curl -s -o /dev/null --max-time 1 "http://127.0.0.1:$port/"; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            echo "compare: $name exited before answering; its log:" >&2
            tail -n 30 "$log" >&2 || true
            SERVER_PID=""
            return 1
        fi
        if (($(now_us) >= deadline)); then
            echo "compare: $name did not answer on port $port within 15 s; its log:" >&2
            tail -n 30 "$log" >&2 || true
            return 1
        fi
        sleep 0.1
    done
}

# The scenario's dstream-bench arguments (after --url), the seconds a run may
# take, the summary lines of its text output, and the report's description.
case "$SCENARIO" in
    append)
        SCENARIO_ARGS=(--streams "$STREAMS" --connections "$CONNECTIONS" --body-bytes "$BODY_BYTES"
            --duration "$DURATION" --warmup "$WARMUP")
        [[ $PRODUCER -eq 1 ]] && SCENARIO_ARGS+=(--producer)
        # Stream set-up may take up to 120 s, draining 10 s.
        RUN_LIMIT=$(awk -v w="$WARMUP" -v d="$DURATION" 'BEGIN { printf "%d", w + d + 150 }')
        SUMMARY_LINES='appends|latency|errors'
        PRODUCER_TEXT=off
        [[ $PRODUCER -eq 1 ]] && PRODUCER_TEXT=on
        SCENARIO_TEXT="append, $STREAMS streams, $CONNECTIONS connections (one request in flight each), $BODY_BYTES-byte bodies, producer $PRODUCER_TEXT, $WARMUP s warm-up + $DURATION s window"
        ;;
    fanout | longpoll)
        if [[ $SCENARIO == fanout ]]; then
            SCENARIO_ARGS=(--subscribers "$SUBSCRIBERS")
            SCENARIO_TEXT="fanout, $SUBSCRIBERS SSE subscribers of one text/plain stream, $RATE messages/s"
        else
            SCENARIO_ARGS=(--streams "$STREAMS")
            SCENARIO_TEXT="longpoll, $STREAMS text/plain streams with one long-poll reader each, $RATE messages/s per stream"
        fi
        SCENARIO_ARGS+=(--rate "$RATE" --body-bytes "$BODY_BYTES" --writers "$WRITERS"
            --duration "$DURATION" --warmup "$WARMUP")
        SCENARIO_TEXT+=" of $BODY_BYTES bytes from $WRITERS writer connections, $WARMUP s warm-up + $DURATION s window"
        # Set-up 120 s, readers ready 60 s, drain 5 s.
        RUN_LIMIT=$(awk -v w="$WARMUP" -v d="$DURATION" 'BEGIN { printf "%d", w + d + 200 }')
        SUMMARY_LINES='deliveries|latency|missed'
        ;;
    catchup)
        SCENARIO_ARGS=(--stream-bytes "$STREAM_BYTES" --append-bytes "$APPEND_BYTES" --readers "$READERS"
            --repeat "$REPEAT" --settle-seconds "$SETTLE")
        RUN_LIMIT=3600
        SUMMARY_LINES='read|first byte|verified'
        SCENARIO_TEXT="catchup, $READERS readers of one $STREAM_BYTES-byte application/octet-stream stream (filled by $APPEND_BYTES-byte appends), $REPEAT round(s), $SETTLE s between fill and reads, every byte checked"
        ;;
esac

# start_perf DIR: perf stat on the server in the background (PERF_PID),
# counts into DIR/perf.csv. A timed scenario's window is known from the
# launch: perf waits out the warm-up and half a second, counts for the window
# less a second and stops by itself. A catch-up's reads follow a fill of
# unknown length: perf counts from the launch in 10 ms intervals, and
# bench/load/perf-counts.mjs keeps those of the reads.
start_perf() {
    local dir=$1 pids
    # The server and the processes it started (an nginx master's workers).
    pids=$(pgrep -P "$SERVER_PID" | paste -sd, -)
    pids=$SERVER_PID${pids:+,$pids}
    if [[ $SCENARIO == catchup ]]; then
        PERF_STARTED_US=$(now_us)
        perf stat -I 10 -x, -o "$dir/perf.csv" -e "$PERF_EVENTS" -p "$pids" 2>"$dir/perf.err" &
    else
        (sleep "$PERF_DELAY" && exec perf stat -x, -o "$dir/perf.csv" -e "$PERF_EVENTS" -p "$pids" \
            -- sleep "$PERF_SECONDS") 2>"$dir/perf.err" &
    fi
    PERF_PID=$!
}

# stop_perf: after the generator has exited; sets PERF_ARGS for perf-counts.mjs.
stop_perf() {
    if [[ $SCENARIO == catchup ]]; then
        PERF_ARGS=(--reads-ended-at "$(awk -v a="$PERF_STARTED_US" -v b="$(now_us)" 'BEGIN { printf "%.3f", (b - a) / 1e6 }')")
        kill -INT "$PERF_PID" 2>/dev/null || true
    else
        # It has stopped by itself, unless the generator ended early.
        PERF_ARGS=("$PERF_SECONDS")
    fi
    wait "$PERF_PID" 2>/dev/null || true
    PERF_PID=""
}
PERF_DELAY=$(awk -v w="$WARMUP" 'BEGIN { print w + 0.5 }')
PERF_SECONDS=$(awk -v d="$DURATION" 'BEGIN { print d - 1 }')

# run_one NAME ROUND: fresh server, one run of the scenario, stop, record.
run_one() {
    local name=$1 round=$2
    local dir="$WORK/$name-$round"
    local port rc json perf_json="" perf_text=""
    port=$(free_port)
    [[ "$port" =~ ^[0-9]+$ ]] || { echo "compare: could not pick a free port" >&2; return 1; }
    mkdir -p "$dir"
    # How fast each CPU is just before the run (bench/load/cpu_speed.h).
    local speed
    speed=$("$BENCH_BIN" cpu-speed 2>"$dir/cpu_speed.txt" | grep -m1 '^{' || true)
    start_server "$name" "$dir" "$port" || return 1
    local args=("$SCENARIO" --url "http://127.0.0.1:$port" "${SCENARIO_ARGS[@]}" --surface "$SURFACE"
        --threads "$THREADS" --server-pid "$SERVER_PID")
    timeout --kill-after=5 "$RUN_LIMIT" "${GENERATOR_PIN[@]}" "$BENCH_BIN" "${args[@]}" >"$dir/bench.json" 2>"$dir/bench.txt" &
    BENCH_PID=$!
    [[ $PERF_STAT -eq 1 ]] && start_perf "$dir"
    if wait "$BENCH_PID"; then rc=0; else rc=$?; fi
    BENCH_PID=""
    [[ $PERF_STAT -eq 1 ]] && stop_perf
    stop_server
    json=$(grep -m1 '^{"scenario"' "$dir/bench.json" || true)
    local perf_field=""
    if [[ $PERF_STAT -eq 1 ]]; then
        if [[ -n "$json" ]]; then
            { read -r perf_json; read -r perf_text; } < <(node "$ROOT/bench/load/perf-counts.mjs" \
                "$dir/perf.csv" "$dir/bench.json" "${PERF_ARGS[@]}") || true
        fi
        perf_field=",\"perf\":${perf_json:-null}"
    fi
    printf '{"server":"%s","round":%d,"rc":%d,"result":%s%s,"cpu_speed":%s}\n' "$name" "$round" "$rc" \
        "${json:-null}" "$perf_field" "${speed:-null}" >>"$RESULTS"
    printf '  %-17s ' "$name"
    if [[ -n "$json" ]]; then
        grep -E "^  ($SUMMARY_LINES) " "$dir/bench.txt" | sed 's/^  //' | tr -s ' ' | paste -sd '|' | sed 's/|/ | /g'
    else
        echo "FAILED (exit $rc)"
        sed 's/^/    /' "$dir/bench.txt" >&2 || true
    fi
    [[ -s "$dir/cpu_speed.txt" ]] && echo "    before it: $(cat "$dir/cpu_speed.txt")"
    if [[ -n "$perf_text" ]]; then
        echo "    $perf_text"
        [[ "${perf_json:-null}" == null && -s "$dir/perf.err" ]] && sed 's/^/      /' "$dir/perf.err"
    fi
    retire_data_dir "$dir/data"
}

LOAD_BEFORE=$(cut -d' ' -f1-3 /proc/loadavg)
START_DATE=$(date -u +%Y-%m-%dT%H:%M:%SZ)
START_S=$SECONDS
echo "compare: $SCENARIO, ${#SERVER_LIST[@]} servers x $PAIRS rounds (load average now $LOAD_BEFORE)" >&2
for round in $(seq 1 "$PAIRS"); do
    echo "round $round/$PAIRS" >&2
    for s in "${SERVER_LIST[@]}"; do
        run_one "$s" "$round" >&2 || echo "  $s: could not run (see above)" >&2
    done
done
LOAD_AFTER=$(cut -d' ' -f1-3 /proc/loadavg)

CPU_MODEL=$(grep -m1 '^model name' /proc/cpuinfo | cut -d: -f2- | sed 's/^ *//' || true)
DSTREAM_REV=$(git -C "$ROOT" rev-parse --short HEAD 2>/dev/null || echo unknown)
if [[ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null || true)" ]]; then
    DSTREAM_REV="$DSTREAM_REV+local changes"
fi
{
cat <<EOF

## dstream vs reference server: $SCENARIO

- date: $START_DATE ($((SECONDS - START_S)) s of runs)
- machine: $(nproc) CPUs, ${CPU_MODEL:-unknown CPU}, $(uname -sr) $(uname -m)
- load average (1/5/15 min): $LOAD_BEFORE before, $LOAD_AFTER after
- command: \`$COMMAND\`
- scenario: $SCENARIO_TEXT, $SURFACE URL layout, $THREADS generator thread(s), $PAIRS round(s) of: ${SERVERS//,/, }
- dstream: $DSTREAM_BIN (source tree at git $DSTREAM_REV); reference: $REF_VERSION on node $(node --version)${REF_FILE_HANDLES:+ (file-backed with $REF_FILE_HANDLES file handles)}${HOT_BYTES:+; durable dstream servers with --hot-bytes $HOT_BYTES}${IO_THREADS:+; dstream servers with --threads $IO_THREADS}${PIN:+; servers on CPUs ${PIN%%:*}, the generator on ${PIN#*:}}; generator: $BENCH_BIN

EOF
node "$ROOT/bench/load/compare-table.mjs" "$RESULTS"
} >"$WORK/report.md"
cat "$WORK/report.md"
