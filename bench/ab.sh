#!/usr/bin/env bash
# Two dstream binaries A/B on one dstream-bench scenario, alternating, in one
# run: what a change costs, measured beside what it changed.
#
#   bench/ab.sh A_BINARY B_BINARY [--pairs N] [--memory] [--duration S]
#               [--warmup S] [--io-threads N] [--pin SERVER_CPUS:GENERATOR_CPUS]
#               [--bench PATH] [--out DIR] [-- SCENARIO ARGS...]
#
# Each pair starts A, then B, each fresh on a free 127.0.0.1 port (durable,
# --data-dir in a temp dir, unless --memory), runs `dstream-bench SCENARIO
# ... --server-pid PID` against it and stops it; data directories stay
# until the script ends (retire_data_dir in bench/lib/process.sh). The
# scenario defaults to `append --streams 500 --connections 64 --body-bytes
# 1024` (bench/README.md);
# --duration and --warmup do not apply to catchup. --io-threads N starts
# both with --threads N; --pin runs both on the first CPUs and the generator
# on the second (taskset lists, as in bench/compare.sh).
# Prints one line per run and the medians of appends/s and server CPU per
# operation for A and B, and B / A. --out DIR keeps the JSON lines.
set -euo pipefail
# The rate each scenario is judged by, the first of these its JSON line has.
export RATE_KEYS='["appends_per_s","deliveries_per_s","aggregate_mb_per_s"]'

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib/process.sh
source "$ROOT/bench/lib/process.sh"
[[ $# -ge 2 ]] || { sed -n '2,17p' "$0" | sed 's/^# \{0,1\}//'; exit 2; }
A=$1 B=$2
shift 2
PAIRS=3 MEMORY=0 DURATION=10 WARMUP=2 BENCH_BIN="$ROOT/build/dstream-bench" OUT=""
IO_THREADS="" SERVER_PIN=() GENERATOR_PIN=()
SCENARIO=(append --streams 500 --connections 64 --body-bytes 1024)
while [[ $# -gt 0 ]]; do
    case "$1" in
        --pairs) PAIRS=$2; shift 2 ;;
        --memory) MEMORY=1; shift ;;
        --duration) DURATION=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --bench) BENCH_BIN=$2; shift 2 ;;
        --io-threads) IO_THREADS=$2; shift 2 ;;
        --pin)
            [[ $2 =~ ^([0-9,-]+):([0-9,-]+)$ ]] ||
                { echo "ab.sh: --pin is SERVER_CPUS:GENERATOR_CPUS, such as 1:0" >&2; exit 2; }
            SERVER_PIN=(taskset -c "${BASH_REMATCH[1]}")
            GENERATOR_PIN=(taskset -c "${BASH_REMATCH[2]}")
            shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        --) shift; SCENARIO=("$@"); break ;;
        *) echo "ab.sh: unknown argument $1" >&2; exit 2 ;;
    esac
done
for bin in "$A" "$B" "$BENCH_BIN"; do
    [[ -x "$bin" ]] || { echo "ab.sh: $bin is not an executable" >&2; exit 2; }
done

WORK=$(mktemp -d /tmp/dstream-ab.XXXXXX)
RESULTS=${OUT:-$WORK}/results.jsonl
mkdir -p "$(dirname "$RESULTS")"
: >"$RESULTS"
PID=""
trap '[[ -n "$PID" ]] && kill "$PID" 2>/dev/null; rm -rf "$WORK"' EXIT

run_one() {
    local name=$1 bin=$2 port dir
    port=$(free_port)
    dir=$(mktemp -d "$WORK/data.XXXXXX")
    local mode=(--data-dir "$dir")
    [[ $MEMORY -eq 1 ]] && mode+=(--memory)
    [[ -n $IO_THREADS ]] && mode+=(--threads "$IO_THREADS")
    "${SERVER_PIN[@]}" "$bin" serve --listen "127.0.0.1:$port" --admin-listen off "${mode[@]}" --log-level warn >"$dir.log" 2>&1 &
    PID=$!
    for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$port/" && break; sleep 0.05; done
    local line
    # A catch-up reads its stream once through: it has no window to time.
    local timing=(--duration "$DURATION" --warmup "$WARMUP")
    [[ ${SCENARIO[0]} == catchup ]] && timing=()
    line=$("${GENERATOR_PIN[@]}" "$BENCH_BIN" "${SCENARIO[@]}" --url "http://127.0.0.1:$port" "${timing[@]}" \
        --server-pid "$PID" 2>/dev/null) || true
    kill "$PID" 2>/dev/null || true
    wait "$PID" 2>/dev/null || true
    PID=""
    retire_data_dir "$dir"
    [[ -n "$line" ]] || { echo "ab.sh: $name gave no result" >&2; return; }
    echo "$line" | NAME="$name" node -e '
        const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
        j.binary = process.env.NAME;
        console.log(JSON.stringify(j));' | tee -a "$RESULTS" | node -e '
        const j = JSON.parse(require("fs").readFileSync(0, "utf8"));
        const cpu = Object.keys(j).find((k) => k.startsWith("server_cpu_us_per_"));
        const rate = JSON.parse(process.env.RATE_KEYS).find((k) => k in j);
        console.log(`${j.binary}: ${rate} ${j[rate]}, ${cpu} ${j[cpu]}, errors ${j.errors ?? 0}`);'
}

for _ in $(seq "$PAIRS"); do
    run_one A "$A"
    run_one B "$B"
done

node - "$RESULTS" <<'JS'
const lines = require('fs').readFileSync(process.argv[2], 'utf8').trim().split('\n').filter(Boolean).map(JSON.parse);
const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor((s.length - 1) / 2)]; };
const cpu = Object.keys(lines[0]).find((k) => k.startsWith('server_cpu_us_per_'));
const rate = JSON.parse(process.env.RATE_KEYS).find((k) => k in lines[0]);
const of = (b, k) => median(lines.filter((l) => l.binary === b).map((l) => l[k]));
for (const k of [rate, cpu]) {
    const a = of('A', k), b = of('B', k);
    console.log(`${k}: A ${a}, B ${b}, B/A ${(b / a).toFixed(3)} (medians of ${lines.length / 2} pairs)`);
}
JS
