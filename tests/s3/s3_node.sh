# What the system tests of a node on an S3 cold tier share (sourced by a
# script run under with_s3rver.sh, with $bin the dstream binary): a work
# directory removed at exit, a node on a free port of loopback, appends of
# random bytes, and the node's chunks in the bucket.
work=$(mktemp -d /tmp/dstream-s3-node.XXXXXX)
pid=""
trap '[[ -n "$pid" ]] && kill -9 "$pid" 2>/dev/null; rm -rf "$work"' EXIT
port=$(python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])')
url="http://127.0.0.1:$port"

fail() { echo "FAIL: $*"; cat "$work/log"; exit 1; }

# start_node PREFIX [SERVE_ARG...]: a node with a 1 MiB hot tier whose cold
# store is s3://BUCKET/PREFIX, once it answers its health check.
start_node() {
    local prefix=$1
    shift
    "$bin" serve --listen "127.0.0.1:$port" --data-dir "$work/data" --admin-listen off \
        --cold-store "s3://$DSTREAM_TEST_S3_BUCKET/$prefix" --s3-endpoint "$DSTREAM_TEST_S3_ENDPOINT" \
        --hot-bytes 1MiB "$@" >>"$work/log" 2>&1 &
    pid=$!
    for _ in $(seq 200); do
        curl -s -o /dev/null "$url/__ursula/health" && return
        sleep 0.05
    done
    echo "the node did not start:"; cat "$work/log"; exit 1
}

# append_random STREAM_URL MIB: creates the stream and appends MIB MiB of
# random bytes to it, 256 KiB an append; they are kept in $work/written.
append_random() {
    local stream=$1 mib=$2
    [[ $(curl -s -o /dev/null -w '%{http_code}' -X PUT -H 'content-type: application/octet-stream' "$stream") == 201 ]] ||
        fail "create"
    head -c $((mib << 20)) /dev/urandom >"$work/written"
    split -b $((256 << 10)) "$work/written" "$work/piece."
    local piece code
    for piece in "$work"/piece.*; do
        code=$(curl -s -o /dev/null -w '%{http_code}' -X POST -H 'content-type: application/octet-stream' \
            --data-binary @"$piece" "$stream")
        [[ $code == 204 ]] || fail "an append answered $code"
    done
}

# chunks_in_bucket PREFIX: how many chunk objects the bucket holds under
# PREFIX/<cluster id>/chunks/.
chunks_in_bucket() {
    curl -s "$DSTREAM_TEST_S3_ENDPOINT/$DSTREAM_TEST_S3_BUCKET?list-type=2&prefix=$1/" |
        grep -o '<Key>[^<]*</Key>' | grep -c '/chunks/' || true
}

# wait_for_chunks PREFIX N: fails unless N chunks reach the bucket within 10 s.
wait_for_chunks() {
    for _ in $(seq 100); do [[ $(chunks_in_bucket "$1") -ge $2 ]] && return; sleep 0.1; done
    fail "$(chunks_in_bucket "$1") chunk objects in the bucket, $2 expected"
}
