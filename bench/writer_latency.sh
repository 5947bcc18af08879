#!/usr/bin/env bash
# A writer's append latency with and without 1000 live readers of its stream:
# a writer must not queue behind the fan-out of its own appends.
#
#   bench/writer_latency.sh [--subscribers M] [--rate R] [--duration S]
#                           [--warmup S] [--pairs N] [--reference]
#                           [--dstream PATH] [--bench PATH] [--out DIR]
#
# Each pair runs `dstream-bench fanout` twice against a fresh durable
# `build/dstream serve --data-dir TEMP`: once with --subscribers 0 (the
# writer alone) and once with --subscribers M (default 1000), one writer
# connection at R appends per second (default 10), text/plain, 256-byte
# bodies, 20 s window after 2 s warm-up. --reference runs the same pair
# against the reference server in memory (@durable-streams/server) too.
# Prints one line per run and, per server, the medians of the writer's p50
# and p99 with and without readers and their ratios; --out DIR keeps the JSON
# lines (results.jsonl). Exit status 1 when a run failed.
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib/process.sh
source "$ROOT/bench/lib/process.sh"
SUBSCRIBERS=1000
RATE=10
DURATION=20
WARMUP=2
PAIRS=3
REFERENCE=0
DSTREAM_BIN="$ROOT/build/dstream"
BENCH_BIN="$ROOT/build/dstream-bench"
OUT=""
while [[ $# -gt 0 ]]; do
    case "$1" in
        --subscribers) SUBSCRIBERS=$2; shift 2 ;;
        --rate) RATE=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --pairs) PAIRS=$2; shift 2 ;;
        --reference) REFERENCE=1; shift ;;
        --dstream) DSTREAM_BIN=$2; shift 2 ;;
        --bench) BENCH_BIN=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        -h|--help) sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
        *) echo "writer_latency.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
for bin in "$DSTREAM_BIN" "$BENCH_BIN"; do
    [[ -x "$bin" ]] || { echo "writer_latency.sh: $bin not found (cmake --build --preset default)" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/dstream-writer-latency.XXXXXX)
RESULTS=${OUT:-$WORK}/results.jsonl
mkdir -p "$(dirname "$RESULTS")"
: >"$RESULTS"
SERVER_PID=""
cleanup() {
    [[ -n "$SERVER_PID" ]] && kill "$SERVER_PID" 2>/dev/null && wait "$SERVER_PID" 2>/dev/null
    rm -rf "$WORK"
}
trap cleanup EXIT

# start NAME PORT DIR: starts a server in the background (SERVER_PID) and
# waits until it answers.
start() {
    local name=$1 port=$2 dir=$3
    case "$name" in
        dstream-durable)
            "$DSTREAM_BIN" serve --listen "127.0.0.1:$port" --data-dir "$dir" --log-level warn \
                >"$dir.log" 2>&1 & ;;
        reference-memory)
            node "$ROOT/bench/load/reference-server.mjs" --port "$port" >"$dir.log" 2>&1 & ;;
    esac
    SERVER_PID=$!
    for _ in $(seq 200); do
        curl -s -o /dev/null "http://127.0.0.1:$port/" && return 0
        sleep 0.05
    done
    echo "writer_latency.sh: $name did not start:" >&2
    cat "$dir.log" >&2
    return 1
}

stop() {
    kill "$SERVER_PID" 2>/dev/null || true
    wait "$SERVER_PID" 2>/dev/null || true
    SERVER_PID=""
}

SERVERS=(dstream-durable)
[[ $REFERENCE -eq 1 ]] && SERVERS+=(reference-memory)
failed=0
for pair in $(seq "$PAIRS"); do
    for server in "${SERVERS[@]}"; do
        for subs in 0 "$SUBSCRIBERS"; do
            port=$(free_port)
            dir="$WORK/$server-$pair-$subs"
            mkdir -p "$dir"
            start "$server" "$port" "$dir"
            line=$("$BENCH_BIN" fanout --url "http://127.0.0.1:$port" --surface v1 \
                --subscribers "$subs" --rate "$RATE" --writers 1 --body-bytes 256 \
                --duration "$DURATION" --warmup "$WARMUP" --server-pid "$SERVER_PID" \
                2>"$dir.bench.log") || { failed=1; cat "$dir.bench.log" >&2; }
            stop
            [[ -n "$line" ]] || continue
            echo "$line" | SERVER="$server" node -e '
                const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
                j.server = process.env.SERVER;
                console.log(JSON.stringify(j));' >>"$RESULTS"
            echo "$line" | node -e '
                const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
                const w = j.write_latency_us;
                console.log(`'"$server"' pair '"$pair"': ${j.subscribers} readers: writer p50 ${w.p50} us, ` +
                            `p99 ${w.p99} us, ${j.messages_acked} appends, missed ${j.missed}`);'
        done
    done
done

node - "$RESULTS" <<'JS'
const lines = require('fs').readFileSync(process.argv[2], 'utf8').trim().split('\n').filter(Boolean).map(JSON.parse);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s.length ? s[Math.floor((s.length - 1) / 2)] : NaN; };
for (const server of [...new Set(lines.map((l) => l.server))]) {
    const of = (subs, q) => median(lines.filter((l) => l.server === server && (l.subscribers > 0) === subs)
                                        .map((l) => l.write_latency_us[q]));
    const p50 = [of(false, 'p50'), of(true, 'p50')];
    const p99 = [of(false, 'p99'), of(true, 'p99')];
    console.log(`${server}: writer p50 ${p50[0]} -> ${p50[1]} us (${(p50[1] / p50[0]).toFixed(2)}x), ` +
                `p99 ${p99[0]} -> ${p99[1]} us (${(p99[1] / p99[0]).toFixed(2)}x) with readers (medians)`);
}
JS
exit "$failed"
