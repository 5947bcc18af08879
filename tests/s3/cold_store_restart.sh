#!/usr/bin/env bash
# A node whose cold tier is an S3 bucket (run under with_s3rver.sh): with a
# 1 MiB hot tier, 12 MiB appended to one stream go to the bucket as chunks,
# under the node's own prefix, and read back identical after a SIGKILL and a
# restart.
#   cold_store_restart.sh DSTREAM_BINARY
set -euo pipefail
bin=$1
work=$(mktemp -d /tmp/dstream-s3-restart.XXXXXX)
pid=""
trap '[[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"

start() {
    "$bin" serve --listen "127.0.0.1:$port" --data-dir "$work/data" \
        --cold-store "s3://$DSTREAM_TEST_S3_BUCKET/restart" --s3-endpoint "$DSTREAM_TEST_S3_ENDPOINT" \
        --hot-bytes 1MiB >>"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
        curl -s -o /dev/null "$url/__ursula/health" && return
        sleep 0.05
    done
    echo "the node did not start:"; cat "$work/log"; exit 1
}
fail() { echo "FAIL: $*"; cat "$work/log"; exit 1; }

start
[[ $(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'content-type: application/octet-stream' "$url/s3-restart/stream") == 201 ]] ||
    fail "create"
head -c $((12 << 20)) /dev/urandom >"$work/written"
split -b $((256 << 10)) "$work/written" "$work/piece."
for piece in "$work"/piece.*; do
    code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/octet-stream' \
        --data-binary @"$piece" "$url/s3-restart/stream")
    [[ $code == 204 ]] || fail "an append answered $code"
done

# The three full 4 MiB chunks, in the bucket under restart/<cluster id>/chunks/.
listing() {
    curl -s "$DSTREAM_TEST_S3_ENDPOINT/$DSTREAM_TEST_S3_BUCKET?list-type=2&prefix=restart/" |
        grep -o '<Key>[^<]*</Key>' | grep -c '/chunks/' || true
}
for _ in $(seq 100); do [[ $(listing) -ge 3 ]] && break; sleep 0.1; done
chunks=$(listing)
[[ $chunks -ge 3 ]] || fail "$chunks chunk objects in the bucket, 3 expected"

kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=""
start
"$bin" read "$url/s3-restart/stream" >"$work/read"
cmp -s "$work/written" "$work/read" || fail "the bytes read back after the restart differ"
echo "ok: $chunks chunk objects in the bucket; 12 MiB read back identical after SIGKILL and restart"
