#!/usr/bin/env bash
# Appends to a 3-node cluster against a single durable node, on this machine,
# in the same run, with the same generator and load (dstream-bench append):
#
#   tests/s3/with_s3rver.sh bench/cluster_append.sh [--rounds N] [--duration S]
#                                                   [--warmup S] [--out DIR]
#
# Both keep their cold tier in the harness's s3rver bucket (a cluster needs
# S3) and run one group, so that every append goes to the one leader the
# generator talks to (dstream-bench follows no redirect). Each round starts
# fresh servers on 127.0.0.2.. and stops them after. Reported per server:
# appends/s and the server CPU per append, summed over every node's process
# (utime + stime from /proc over the whole bench run, setup and warm-up
# included, divided by every append answered in it). The table gives medians
# over the rounds and the cluster / single ratios.
set -euo pipefail
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=bench/lib/process.sh
source "$ROOT/bench/lib/process.sh"
BIN=$ROOT/build/dstream
BENCH=$ROOT/build/dstream-bench
ROUNDS=3 DURATION=10 WARMUP=2 OUT=
while [[ $# -gt 0 ]]; do
    case $1 in
        --rounds) ROUNDS=$2; shift 2 ;;
        --duration) DURATION=$2; shift 2 ;;
        --warmup) WARMUP=$2; shift 2 ;;
        --out) OUT=$2; shift 2 ;;
        *) echo "usage: $0 [--rounds N] [--duration S] [--warmup S] [--out DIR]" >&2; exit 2 ;;
    esac
done
: "${DSTREAM_TEST_S3_ENDPOINT:?run under tests/s3/with_s3rver.sh}"
WORK=$(mktemp -d /tmp/dstream-cluster-bench.XXXXXX)
PIDS=()
cleanup() {
    for p in "${PIDS[@]}"; do kill "$p" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$WORK"
}
trap cleanup EXIT
RESULTS=$WORK/results.jsonl
: >"$RESULTS"

cpu_ticks() {  # utime + stime of the processes named, in clock ticks
    local total=0 p
    for p in "$@"; do
        read -r -a f <"/proc/$p/stat"
        total=$((total + f[13] + f[14]))
    done
    echo "$total"
}
wait_ready() {
    for _ in $(seq 200); do
        curl -sf -o /dev/null "$1/__ursula/ready" && return 0
        sleep 0.05
    done
    echo "not ready: $1" >&2
    return 1
}
cold() { echo "--cold-store s3://$DSTREAM_TEST_S3_BUCKET/$1 --s3-endpoint $DSTREAM_TEST_S3_ENDPOINT"; }
# run_bench NAME URL PID...: one bench run, its JSON line with the CPU of all PIDS added.
run_bench() {
    local name=$1 url=$2
    shift 2
    local before after line
    before=$(cpu_ticks "$@")
    line=$("$BENCH" append --url "$url" --duration "$DURATION" --warmup "$WARMUP" --server-pid "$1" | head -1)
    after=$(cpu_ticks "$@")
    python3 - "$name" "$line" "$((after - before))" "$(getconf CLK_TCK)" "$#" <<'PY' >>"$RESULTS"
import json, sys
name, line, ticks, hz, nodes = sys.argv[1], json.loads(sys.argv[2]), int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
answered = sum(v for k, v in line["status_counts"].items() if k.startswith("2"))
line.update(server=name, nodes=nodes, servers_cpu_s=ticks / hz,
            servers_cpu_us_per_append=ticks / hz * 1e6 / answered if answered else None)
print(json.dumps(line))
PY
}

for round in $(seq "$ROUNDS"); do
    # A single durable node.
    host=127.0.0.2 port=$(free_port 127.0.0.2)
    # shellcheck disable=SC2046
    "$BIN" serve --listen "$host:$port" --admin-listen off --data-dir "$WORK/single$round" --groups 1 --log-level warn \
        $(cold "single$round") >"$WORK/single$round.log" 2>&1 &
    PIDS=($!)
    wait_ready "http://$host:$port"
    run_bench single "http://$host:$port" "${PIDS[0]}"
    kill "${PIDS[0]}"; wait "${PIDS[0]}" || true; PIDS=()

    # Three nodes, one group of three voters.
    file=$WORK/cluster$round.toml
    printf 'cluster_id = "bench-%s"\ngroups = 1\nreplicas = 3\n' "$round" >"$file"
    urls=()
    for i in 1 2 3; do
        host=127.0.0.$((i + 1))
        printf '[[node]]\nid = %s\nraft = "%s:%s"\nhttp = "%s:%s"\n' "$i" "$host" "$(free_port "$host")" \
            "$host" "$(free_port "$host")" >>"$file"
    done
    for i in 1 2 3; do
        # shellcheck disable=SC2046
        "$BIN" serve --cluster "$file" --node-id "$i" --admin-listen off --data-dir "$WORK/node$round-$i" --log-level warn \
            $(cold "cluster$round") >"$WORK/node$round-$i.log" 2>&1 &
        PIDS+=($!)
    done
    for i in 1 2 3; do
        urls+=("http://$(sed -n "/^id = $i\$/{n;n;p}" "$file" | cut -d'"' -f2)")
    done
    for u in "${urls[@]}"; do wait_ready "$u"; done
    leader=$(curl -s "${urls[0]}/__ursula/cluster" | python3 -c 'import json,sys; print(json.load(sys.stdin)["groups"][0]["leader"])')
    lpid=${PIDS[$((leader - 1))]}
    others=()
    for p in "${PIDS[@]}"; do [[ $p == "$lpid" ]] || others+=("$p"); done
    run_bench cluster3 "${urls[$((leader - 1))]}" "$lpid" "${others[@]}"
    for p in "${PIDS[@]}"; do kill "$p"; done
    wait || true
    PIDS=()
done

python3 - "$RESULTS" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda name, key: statistics.median(r[key] for r in rows if r["server"] == name)
print("| server | nodes | appends/s | server CPU per append (all nodes) | p50 latency | p99 latency |")
print("| --- | --- | --- | --- | --- | --- |")
for name in ("single", "cluster3"):
    n = next(r["nodes"] for r in rows if r["server"] == name)
    print(f"| {name} | {n} | {med(name, 'appends_per_s'):,.0f} | {med(name, 'servers_cpu_us_per_append'):.1f} us"
          f" | {statistics.median(r['latency_us']['p50'] for r in rows if r['server'] == name) / 1000:.2f} ms"
          f" | {statistics.median(r['latency_us']['p99'] for r in rows if r['server'] == name) / 1000:.2f} ms |")
print(f"cluster3 / single: appends/s {med('cluster3', 'appends_per_s') / med('single', 'appends_per_s'):.2f}x, "
      f"CPU per append {med('cluster3', 'servers_cpu_us_per_append') / med('single', 'servers_cpu_us_per_append'):.2f}x")
PY
if [[ -n $OUT ]]; then mkdir -p "$OUT"; cp "$RESULTS" "$OUT/"; fi
