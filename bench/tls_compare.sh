#!/usr/bin/env bash
# Server CPU per append over TLS, HTTP/1.1 and HTTP/2, as a ratio to nginx
# terminating TLS with the same certificate and doing nothing else.
#
#   bench/tls_compare.sh [--servers LIST] [--protocols LIST] [--rounds N]
#                        [--requests N] [--streams N] [--connections C]
#                        [--body-bytes B] [--h2-streams M] [--plain]
#                        [--io-threads N] [--dstream PATH] [--out FILE]
#
# The load is the append scenario of bench/compare.sh (500 streams, 64
# connections with one request in flight each, 1 KiB bodies) driven by
# h2load (Debian's nghttp2-client, installed when missing), which speaks
# HTTP/1.1 (--h1) and HTTP/2 over TLS; dstream-bench speaks plain HTTP/1.1
# only. Each connection takes the streams in turn. --h2-streams M lets each
# HTTP/2 connection keep M requests in flight (default 1, as HTTP/1.1 does
# without pipelining): a browser's or an SDK's multiplexed connection.
#
# Servers, each started fresh on a free 127.0.0.1 port for every run:
#   nginx-tls-floor   Debian's nginx, one process, answering PUT 201 / POST 204
#                     with Stream-Next-Offset and nothing else
#                     (bench/nginx_tls_floor.conf)
#   dstream-durable   build/dstream serve --data-dir TEMP --tls-cert --tls-key
#   dstream-memory    the same with --memory
# Protocols: h1 (HTTP/1.1, ALPN http/1.1) and h2 (HTTP/2, ALPN h2). --plain
# runs the same without TLS (h2 as h2c with prior knowledge), whose h1 figures
# can be read beside bench/compare.sh's. --io-threads N starts dstream with
# --threads N (its I/O threads; without it, the server's default) and the
# floor with N worker processes (without it, one process), their CPU summed.
#
# A run: start the server, create the streams (curl PUTs; the floor keeps
# none and answers every POST alike), a warm-up of a
# fifth of --requests, then --requests appends (default 200000) with the
# server's CPU (utime + stime of every thread, /proc/PID/stat) read before
# and after. Rounds (default 3) alternate the servers; the table gives the
# medians and each server's CPU per append as a ratio to the floor of its
# protocol. --out FILE keeps one JSON line per run.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib/process.sh
source "$ROOT/bench/lib/process.sh"

SERVERS="nginx-tls-floor,dstream-durable,dstream-memory"
PROTOCOLS="h1,h2"
ROUNDS=3
REQUESTS=200000
STREAMS=500
CONNECTIONS=64
BODY_BYTES=1024
H2_STREAMS=1
PLAIN=0
DSTREAM_BIN="$ROOT/build/dstream"
IO_THREADS=""
OUT=""

usage() {
    sed -n '2,/^set -euo/p' "${BASH_SOURCE[0]}" | sed '$d; s/^# \{0,1\}//' >&2
    exit 2
}
need_value() { [[ $# -ge 2 && -n "$2" ]] || { echo "tls_compare: $1 needs a value" >&2; exit 2; }; }
while [[ $# -gt 0 ]]; do
    case "$1" in
        --servers) need_value "$@"; SERVERS=$2; shift 2 ;;
        --protocols) need_value "$@"; PROTOCOLS=$2; shift 2 ;;
        --rounds) need_value "$@"; ROUNDS=$2; shift 2 ;;
        --requests) need_value "$@"; REQUESTS=$2; shift 2 ;;
        --streams) need_value "$@"; STREAMS=$2; shift 2 ;;
        --connections) need_value "$@"; CONNECTIONS=$2; shift 2 ;;
        --body-bytes) need_value "$@"; BODY_BYTES=$2; shift 2 ;;
        --h2-streams) need_value "$@"; H2_STREAMS=$2; shift 2 ;;
        --plain) PLAIN=1; shift ;;
        --dstream) need_value "$@"; DSTREAM_BIN=$2; shift 2 ;;
        --io-threads) need_value "$@"; IO_THREADS=$2; shift 2 ;;
        --out) need_value "$@"; OUT=$2; shift 2 ;;
        -h | --help) usage ;;
        *) echo "tls_compare: unknown argument '$1'" >&2; usage ;;
    esac
done
IFS=, read -r -a SERVER_LIST <<<"$SERVERS"
IFS=, read -r -a PROTOCOL_LIST <<<"$PROTOCOLS"
for s in "${SERVER_LIST[@]}"; do
    case "$s" in
        nginx-tls-floor | dstream-durable | dstream-memory) ;;
        *) echo "tls_compare: unknown server '$s'" >&2; exit 2 ;;
    esac
done
[[ -z "$IO_THREADS" || "$IO_THREADS" =~ ^[1-9][0-9]*$ ]] ||
    { echo "tls_compare: --io-threads must be a positive integer" >&2; exit 2; }
for p in "${PROTOCOL_LIST[@]}"; do
    [[ "$p" == h1 || "$p" == h2 ]] || { echo "tls_compare: unknown protocol '$p' (h1, h2)" >&2; exit 2; }
done

install_missing() {
    local tool=$1 package=$2
    command -v "$tool" >/dev/null || [[ -x "/usr/sbin/$tool" ]] && return 0
    echo "tls_compare: installing Debian's $package for $tool" >&2
    local sudo_cmd=()
    [[ $(id -u) -ne 0 ]] && sudo_cmd=(sudo -n)
    "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "$package" >&2
}
install_missing h2load nghttp2-client
[[ ",$SERVERS," == *,nginx-tls-floor,* ]] && install_missing nginx nginx
NGINX_BIN=$(command -v nginx || echo /usr/sbin/nginx)
for tool in curl openssl node; do
    command -v "$tool" >/dev/null || { echo "tls_compare: $tool is not installed (run scripts/install-deps)" >&2; exit 1; }
done
if [[ ",$SERVERS," == *,dstream-* && ! -x "$DSTREAM_BIN" ]]; then
    echo "tls_compare: '$DSTREAM_BIN' is missing; build it (make build) or pass --dstream PATH" >&2
    exit 1
fi

WORK=$(mktemp -d "${TMPDIR:-/tmp}/dstream-tls-compare.XXXXXX")
SERVER_PID=""
stop_server() {
    stop_process "$SERVER_PID"
    SERVER_PID=""
}
# shellcheck disable=SC2317  # invoked from the EXIT trap
cleanup() {
    local rc=$?
    stop_server
    rm -rf "$WORK"
    exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# One certificate for every server of the run: ECDSA P-256, for 127.0.0.1.
CERT="$WORK/cert.pem"
KEY="$WORK/key.pem"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 -nodes -days 2 \
    -subj /CN=127.0.0.1 -addext subjectAltName=IP:127.0.0.1 \
    -keyout "$KEY" -out "$CERT" 2>/dev/null
head -c "$BODY_BYTES" /dev/zero | tr '\0' 'x' >"$WORK/body"

SCHEME=https
[[ $PLAIN -eq 1 ]] && SCHEME=http

# start_server NAME PROTOCOL DIR PORT: in the background (SERVER_PID), then
# waits up to 15 s for an answer.
start_server() {
    local name=$1 protocol=$2 dir=$3 port=$4
    local log="$dir/server.log"
    local server_args=()
    [[ $PLAIN -eq 0 ]] && server_args=(--tls-cert "$CERT" --tls-key "$KEY")
    [[ -n "$IO_THREADS" ]] && server_args+=(--threads "$IO_THREADS")
    mkdir -p "$dir/data"
    case "$name" in
        dstream-durable)
            "$DSTREAM_BIN" serve --listen "127.0.0.1:$port" --admin-listen off --data-dir "$dir/data" "${server_args[@]}" >"$log" 2>&1 &
            ;;
        dstream-memory)
            "$DSTREAM_BIN" serve --listen "127.0.0.1:$port" --admin-listen off --data-dir "$dir/data" --memory "${server_args[@]}" >"$log" 2>&1 &
            ;;
        nginx-tls-floor)
            local flags="ssl http2"
            if [[ $PLAIN -eq 1 ]]; then
                flags=""
                [[ $protocol == h2 ]] && flags="http2"
            fi
            local workers=${IO_THREADS:-1} master=off
            ((workers > 1)) && master=on
            sed -e "s|@PORT@|$port|g" -e "s|@DIR@|$dir|g" -e "s|@LISTEN_FLAGS@|$flags|g" \
                -e "s|@CERT@|$CERT|g" -e "s|@KEY@|$KEY|g" -e "s|@MASTER@|$master|" \
                -e "s|@WORKERS@|$workers|" "$ROOT/bench/nginx_tls_floor.conf" >"$dir/nginx.conf"
            "$NGINX_BIN" -p "$dir" -c "$dir/nginx.conf" >"$log" 2>&1 &
            ;;
    esac
    SERVER_PID=$!
    local probe=(curl -s -o /dev/null --max-time 1 --cacert "$CERT")
    [[ $PLAIN -eq 1 && $protocol == h2 && $name == nginx-tls-floor ]] && probe+=(--http2-prior-knowledge)
    for _ in $(seq 150); do
        "${probe[@]}" "$SCHEME://127.0.0.1:$port/" && return 0
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            echo "tls_compare: $name exited before answering; its log:" >&2
            tail -n 30 "$log" >&2 || true
            SERVER_PID=""
            return 1
        fi
        sleep 0.1
    done
    echo "tls_compare: $name did not answer on port $port within 15 s" >&2
    tail -n 30 "$log" >&2 || true
    return 1
}

# The server's CPU ticks, with those of the processes it started (an nginx
# master's workers).
cpu_ticks() {
    local pid total=0
    for pid in "$1" $(pgrep -P "$1"); do
        total=$((total + $(awk '{ print $14 + $15 }' "/proc/$pid/stat" 2>/dev/null || echo 0)))
    done
    echo "$total"
}
TICKS_PER_SECOND=$(getconf CLK_TCK)

# run_h2load PROTOCOL URIS N OUTPUT
run_h2load() {
    local protocol=$1 uris=$2 n=$3 output=$4
    local in_flight=$H2_STREAMS
    [[ $protocol == h1 ]] && in_flight=1
    local args=(-c "$CONNECTIONS" -m "$in_flight" -t 1 -n "$n" -d "$WORK/body"
        -H 'Content-Type: application/octet-stream' -i "$uris")
    [[ $protocol == h1 ]] && args+=(--h1)
    h2load "${args[@]}" >"$output" 2>&1
}

RESULTS="$WORK/results.jsonl"
: >"$RESULTS"
for round in $(seq "$ROUNDS"); do
    for protocol in "${PROTOCOL_LIST[@]}"; do
        for name in "${SERVER_LIST[@]}"; do
            dir="$WORK/run-$round-$protocol-$name"
            mkdir -p "$dir"
            port=$(free_port)
            start_server "$name" "$protocol" "$dir" "$port"
            : >"$dir/uris"
            : >"$dir/create"
            for i in $(seq "$STREAMS"); do
                echo "$SCHEME://127.0.0.1:$port/v1/stream/tls-$i" >>"$dir/uris"
                printf 'url = "%s://127.0.0.1:%s/v1/stream/tls-%s"\n' "$SCHEME" "$port" "$i" >>"$dir/create"
            done
            # The floor keeps no streams; dstream's are made over HTTP/1.1,
            # which its listener speaks with or without TLS.
            if [[ $name != nginx-tls-floor ]]; then
                curl -s --fail --http1.1 --parallel --parallel-max 16 --cacert "$CERT" -X PUT \
                    -H 'Content-Type: application/octet-stream' -o /dev/null -K "$dir/create" 2>"$dir/create.err" ||
                    { echo "tls_compare: creating the streams on $name failed:" >&2; cat "$dir/create.err" >&2; exit 1; }
            fi
            run_h2load "$protocol" "$dir/uris" $((REQUESTS / 5)) "$dir/warmup.txt" ||
                { echo "tls_compare: the warm-up against $name ($protocol) failed:" >&2; cat "$dir/warmup.txt" >&2; exit 1; }
            before=$(cpu_ticks "$SERVER_PID")
            run_h2load "$protocol" "$dir/uris" "$REQUESTS" "$dir/h2load.txt" ||
                { echo "tls_compare: h2load against $name ($protocol) failed:" >&2; cat "$dir/h2load.txt" >&2; exit 1; }
            after=$(cpu_ticks "$SERVER_PID")
            stop_server
            node -e '
const fs = require("fs");
const [file, server, protocol, round, ticks, hz, scheme, connections, inFlight, bodyBytes, streams] = process.argv.slice(1);
const text = fs.readFileSync(file, "utf8");
const num = (re) => { const m = text.match(re); return m ? Number(m[1]) : null; };
const succeeded = num(/requests: .* (\d+) succeeded/);
const took = text.match(/finished in ([\d.]+)(ms|s)/);
const seconds = took ? Number(took[1]) / (took[2] === "ms" ? 1000 : 1) : null;
const tls = text.match(/TLS Protocol: (\S+)\s+Cipher: (\S+)/);
const alpn = text.match(/Application protocol: (\S+)/);
const line = {
  server, protocol, scheme, round: Number(round), streams: Number(streams), connections: Number(connections),
  in_flight_per_connection: protocol === "h1" ? 1 : Number(inFlight), body_bytes: Number(bodyBytes),
  appends: succeeded, failed: num(/(\d+) failed/), errored: num(/(\d+) errored/),
  status_2xx: num(/status codes: (\d+) 2xx/),
  appends_per_s: succeeded / seconds,
  server_cpu_us_per_append: (Number(ticks) / Number(hz)) * 1e6 / succeeded,
  tls: tls ? tls[1] + " " + tls[2] : null, alpn: alpn ? alpn[1] : null,
};
console.log(JSON.stringify(line));
' "$dir/h2load.txt" "$name" "$protocol" "$round" $((after - before)) "$TICKS_PER_SECOND" "$SCHEME" \
                "$CONNECTIONS" "$H2_STREAMS" "$BODY_BYTES" "$STREAMS" >>"$RESULTS"
            tail -n 1 "$RESULTS" >&2
        done
    done
done

[[ -n "$OUT" ]] && cp "$RESULTS" "$OUT"
node -e '
const fs = require("fs");
const lines = fs.readFileSync(process.argv[1], "utf8").trim().split("\n").map(JSON.parse);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); const m = s.length >> 1; return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2; };
const groups = new Map();
for (const l of lines) {
  const k = l.protocol + "\t" + l.server;
  if (!groups.has(k)) groups.set(k, []);
  groups.get(k).push(l);
}
console.log("| protocol | server | appends/s | server CPU µs/append | × floor | failed | negotiated |");
console.log("|---|---|---:|---:|---:|---:|---|");
for (const [k, ls] of groups) {
  const [protocol, server] = k.split("\t");
  const cpu = median(ls.map((l) => l.server_cpu_us_per_append));
  const floor = groups.get(protocol + "\tnginx-tls-floor");
  const ratio = floor ? (cpu / median(floor.map((l) => l.server_cpu_us_per_append))).toFixed(2) : "—";
  const failed = ls.reduce((a, l) => a + l.failed + l.errored + (l.appends - l.status_2xx), 0);
  const rate = Math.round(median(ls.map((l) => l.appends_per_s))).toLocaleString("en-US");
  console.log(`| ${protocol} | ${server} | ${rate} | ${cpu.toFixed(1)} | ${ratio} | ${failed} | ${ls[0].alpn ?? ""} ${ls[0].tls ?? ""} |`);
}
' "$RESULTS"
