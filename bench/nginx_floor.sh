#!/usr/bin/env bash
# The floor of one HTTP exchange on this machine: nginx (Debian's, installed
# here when missing) as one process answering PUT 201 / POST 204 with
# Stream-Next-Offset and nothing else (bench/nginx_floor.conf), under the
# same dstream-bench append load as bench/compare.sh's append scenario. Its
# server CPU per request is what a stream server cannot go below on this
# machine; dstream's figure is reported as a ratio to it.
#
#   bench/nginx_floor.sh [--duration S] [--warmup S] [--streams N]
#                        [--connections C] [--body-bytes B] [--bench PATH]
#
# Prints dstream-bench's JSON line (server_cpu_us_per_op among its fields).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
DURATION=10
WARMUP=2
STREAMS=500
CONNECTIONS=64
BODY_BYTES=1024
BENCH="$ROOT/build/dstream-bench"
while [[ $# -gt 0 ]]; do
    case $1 in
        --duration) DURATION=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --streams) STREAMS=$2; shift 2 ;;
        --connections) CONNECTIONS=$2; shift 2 ;;
        --body-bytes) BODY_BYTES=$2; shift 2 ;;
        --bench) BENCH=$2; shift 2 ;;
        -h|--help) sed -n '2,12p' "$0"; exit 0 ;;
        *) echo "nginx_floor: unknown argument $1" >&2; exit 2 ;;
    esac
done
[[ -x $BENCH ]] || { echo "nginx_floor: no dstream-bench at $BENCH (make build)" >&2; exit 2; }

if ! command -v nginx > /dev/null && [[ ! -x /usr/sbin/nginx ]]; then
    echo "nginx_floor: installing Debian's nginx" >&2
    SUDO=()
    [[ $(id -u) -ne 0 ]] && SUDO=(sudo -n)
    "${SUDO[@]}" apt-get install -y -qq --no-install-recommends nginx >&2
fi
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

DIR=$(mktemp -d /tmp/dstream-nginx-floor-XXXXXX)
PORT=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
sed -e "s|@PORT@|$PORT|g" -e "s|@DIR@|$DIR|g" "$ROOT/bench/nginx_floor.conf" > "$DIR/nginx.conf"
"$NGINX" -p "$DIR" -c "$DIR/nginx.conf" &
PID=$!
cleanup() {
    kill "$PID" 2> /dev/null || true
    wait "$PID" 2> /dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT
for _ in $(seq 1 100); do
    curl -s -o /dev/null -X PUT "http://127.0.0.1:$PORT/v1/stream/ready" && break
    sleep 0.05
done
"$BENCH" append --url "http://127.0.0.1:$PORT" --server-pid "$PID" --surface v1 \
    --warmup "$WARMUP" --duration "$DURATION" --streams "$STREAMS" \
    --connections "$CONNECTIONS" --body-bytes "$BODY_BYTES"
