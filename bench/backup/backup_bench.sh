#!/usr/bin/env bash
# The time and space of a backup, its verify and its restore, for
# docs/operations.md: a fresh durable node (defaults, the cold tier under its
# data dir) is loaded with GIB GiB in STREAMS streams, 8 MiB appends of
# random bytes, then backed up while a writer keeps appending 64 KiB
# records, verified, written to again, and restored.
#
#   bench/backup/backup_bench.sh [GIB] [STREAMS]    # defaults: 2 GiB, 16 streams
#
# Needs build/dstream (or DSTREAM_BIN), curl and GNU time. Work goes under
# BENCH_DIR (default: a temp dir), which is removed after. Prints one line per
# step: wall seconds, peak RSS of the command, sizes.
set -euo pipefail

GIB=${1:-2}
STREAMS=${2:-16}
BIN=${DSTREAM_BIN:-build/dstream}
WORK=$(mktemp -d "${BENCH_DIR:-${TMPDIR:-/tmp}}/dstream-backup-bench.XXXXXX")
PORT=${PORT:-4537}
ADMIN_PORT=${ADMIN_PORT:-4538}
URL=http://127.0.0.1:$PORT
ADMIN=http://127.0.0.1:$ADMIN_PORT
PID=
FRESH=
WRITER=

cleanup() {
    [[ -n "$WRITER" ]] && kill "$WRITER" 2>/dev/null || true
    for p in $PID $FRESH; do kill "$p" 2>/dev/null || true; wait "$p" 2>/dev/null || true; done
    rm -rf "$WORK"
}
trap cleanup EXIT

bytes() { du -sb "$1" | cut -f1; }
gib() { awk -v b="$1" 'BEGIN { printf "%.2f GiB", b / 1073741824 }'; }

"$BIN" serve --listen "127.0.0.1:$PORT" --admin-listen "127.0.0.1:$ADMIN_PORT" \
    --data-dir "$WORK/data" --log-level warn >"$WORK/server.log" 2>&1 &
PID=$!
for _ in $(seq 200); do curl -s -o /dev/null "$URL/__ursula/health" && break; sleep 0.05; done

head -c $((8 << 20)) /dev/urandom >"$WORK/piece"
pieces=$((GIB * 1024 / 8))
started=$(date +%s.%N)
for s in $(seq 0 $((STREAMS - 1))); do
    curl -sf -X PUT -H 'Content-Type: application/octet-stream' "$URL/bench-backup/s$s" >/dev/null
done
for i in $(seq 0 $((pieces - 1))); do
    curl -sf -X POST -H 'Content-Type: application/octet-stream' --data-binary @"$WORK/piece" \
        "$URL/bench-backup/s$((i % STREAMS))" >/dev/null
done
load_s=$(awk -v a="$started" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }')
echo "loaded $(gib $((pieces << 23))) in $STREAMS streams in ${load_s} s; data dir $(gib "$(bytes "$WORK/data")")"

# A writer that keeps appending 64 KiB records while the backup runs.
head -c 65536 /dev/urandom >"$WORK/record"
curl -sf -X PUT -H 'Content-Type: application/octet-stream' "$URL/bench-backup/live" >/dev/null
( while true; do
      curl -sf -X POST -H 'Content-Type: application/octet-stream' --data-binary @"$WORK/record" \
          "$URL/bench-backup/live" >/dev/null || true
  done ) &
WRITER=$!

step() {  # step NAME COMMAND...: wall time and peak RSS of the command
    local name=$1
    shift
    /usr/bin/time -f "%e %M" -o "$WORK/time" "$@" >"$WORK/$name.out" 2>"$WORK/$name.err"
    read -r wall rss <"$WORK/time"
    echo "$name: ${wall} s wall, command peak RSS $((rss / 1024)) MiB"
}

live_before=$(curl -sI "$URL/bench-backup/live" | tr -d '\r' | awk -F': ' 'tolower($1)=="stream-next-offset" { print $2 + 0 }')
step backup "$BIN" backup create "$ADMIN" --to "$WORK/backup"
live_after=$(curl -sI "$URL/bench-backup/live" | tr -d '\r' | awk -F': ' 'tolower($1)=="stream-next-offset" { print $2 + 0 }')
kill "$WRITER"; wait "$WRITER" 2>/dev/null || true; WRITER=
echo "  backup $(cat "$WORK/backup.out"): $(gib "$(bytes "$WORK/backup")") in $(find "$WORK/backup" -type f | wc -l) files;" \
     "the writer appended $(( (live_after - live_before) >> 20 )) MiB meanwhile"
step verify "$BIN" backup verify "$WORK/backup"
step backup-idle "$BIN" backup create "$ADMIN" --to "$WORK/backup-idle"
echo "  (no writer): $(gib "$(bytes "$WORK/backup-idle")")"
rm -rf "$WORK/backup-idle"
for s in $(seq 0 $((STREAMS - 1))); do
    curl -sf -X POST -H 'Content-Type: application/octet-stream' --data-binary @"$WORK/record" \
        "$URL/bench-backup/s$s" >/dev/null
done
step restore "$BIN" restore "$ADMIN" --from "$WORK/backup"
step restore-again "$BIN" restore "$ADMIN" --from "$WORK/backup"
echo "server peak RSS $(( $(awk '/VmHWM/ { print $2 }' "/proc/$PID/status") / 1024 )) MiB;" \
     "data dir after the restore $(gib "$(bytes "$WORK/data")")"

# A fresh node (a lost machine replaced): the restore copies every object.
"$BIN" serve --listen "127.0.0.1:$((PORT + 2))" --admin-listen "127.0.0.1:$((ADMIN_PORT + 2))" \
    --data-dir "$WORK/fresh" --log-level warn >"$WORK/fresh.log" 2>&1 &
FRESH=$!
for _ in $(seq 200); do curl -s -o /dev/null "http://127.0.0.1:$((PORT + 2))/__ursula/health" && break; sleep 0.05; done
step restore-fresh "$BIN" restore "http://127.0.0.1:$((ADMIN_PORT + 2))" --from "$WORK/backup"
echo "  fresh node: data dir $(gib "$(bytes "$WORK/fresh")"), peak RSS" \
     "$(( $(awk '/VmHWM/ { print $2 }' "/proc/$FRESH/status") / 1024 )) MiB"
