#!/usr/bin/env bash
# A catch-up read of cold bytes on an S3 cold tier streams the ranged GETs to
# the socket (run under with_s3rver.sh): the bytes are exact, the store reads
# the range and no more (dstream_object_store_bytes_total: stream_range
# grows by the range, get not at all: no chunk is loaded whole), and many
# readers at once leave the node's memory far below what their ranges add up
# to; a chunk S3 cannot give is the 503 COLD_BACKPRESSURE refusal.
#   cold_stream_read.sh DSTREAM_BINARY
set -euo pipefail
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/s3_node.sh"
stream="$url/s3-stream/stream"

# No chunk cache: a node that loaded chunks whole would hold one per reader.
start_node stream --chunk-cache-bytes 0
append_random "$stream" 12
wait_for_chunks stream 3

# metric NAME OP: the value of NAME{op="OP"} in a scrape.
metric() {
    curl -s "$url/__ursula/metrics" | awk -v name="$1{op=\"$2\"}" '$1 == name { print $2 }'
}
offset() { printf '%020d' "$1"; }
# written FIRST LENGTH: those bytes of what was appended.
written() { dd if="$work/written" iflag=skip_bytes,count_bytes skip="$1" count="$2" status=none; }

# [first, first + length) from the node and from what was written.
check_range() {
    local first=$1 length=$2
    curl -s -o "$work/read" -w '%{http_code}' "$stream?offset=$(offset "$first")&max_bytes=$length" >"$work/code"
    [[ $(cat "$work/code") == 200 ]] || fail "a read of $length bytes at $first answered $(cat "$work/code")"
    written "$first" "$length" >"$work/expected"
    cmp -s "$work/expected" "$work/read" || fail "the $length bytes read at $first differ"
}

got_before=$(metric dstream_object_store_bytes_total get)
streamed_before=$(metric dstream_object_store_bytes_total stream_range)
# Inside the first chunk, then across the first two.
check_range 123457 300000
check_range $(((4 << 20) - 100000)) 200000
streamed=$(($(metric dstream_object_store_bytes_total stream_range) - streamed_before))
[[ $streamed == 500000 ]] || fail "the store read $streamed bytes for 500000 asked"
[[ $(metric dstream_object_store_bytes_total get) == "$got_before" ]] ||
    fail "a chunk was loaded whole (get bytes $got_before -> $(metric dstream_object_store_bytes_total get))"

# 16 readers of 8 MiB each at once, each reading 4 MiB/s through a small
# receive buffer: 128 MiB in their ranges, a bounded buffer each in the node
# (a node that loaded the chunks whole would hold them until sent).
rss_kib() { awk '/^VmRSS:/ { print $2 }' "/proc/$pid/status"; }
written $((1 << 20)) $((8 << 20)) >"$work/expected"
base=$(rss_kib)
peak=$base
"$(dirname "${BASH_SOURCE[0]}")/slow_readers.py" 127.0.0.1 "$port" \
    "/s3-stream/stream?offset=$(offset $((1 << 20)))&max_bytes=$((8 << 20))" \
    "$work/expected" 16 $((4 << 20)) >"$work/readers" 2>&1 &
readers=$!
while kill -0 "$readers" 2>/dev/null; do
    now=$(rss_kib)
    ((now > peak)) && peak=$now
    sleep 0.05
done
wait "$readers" || fail "the slow readers: $(cat "$work/readers")"
growth_mib=$(((peak - base) >> 10))
((growth_mib < 48)) || fail "the node grew by $growth_mib MiB for 16 streamed reads of 8 MiB"

# The first chunk gone from the bucket: S3 answers 404 before any byte, and
# the read is refused 503 COLD_BACKPRESSURE with Retry-After, nothing partial.
first_chunk=$(curl -s "$DSTREAM_TEST_S3_ENDPOINT/$DSTREAM_TEST_S3_BUCKET?list-type=2&prefix=stream/" |
    grep -o '<Key>[^<]*/chunks/[^<]*</Key>' | sed 's/<[^>]*>//g' | sort | head -1)
curl -s -o /dev/null -X DELETE "$DSTREAM_TEST_S3_ENDPOINT/$DSTREAM_TEST_S3_BUCKET/$first_chunk"
curl -s -D "$work/refused.head" -o "$work/refused" "$stream?offset=$(offset 1000)&max_bytes=1000"
grep -q '^HTTP/1.1 503' "$work/refused.head" || fail "a read of a missing chunk answered $(head -1 "$work/refused.head")"
grep -qi '^retry-after: 1' "$work/refused.head" || fail "the 503 has no Retry-After"
grep -q COLD_BACKPRESSURE "$work/refused" || fail "the 503 is not COLD_BACKPRESSURE: $(cat "$work/refused")"
echo "ok: exact ranges, the store read 500000 bytes for 500000 asked; 16 readers of 8 MiB grew the node by $growth_mib MiB; a missing chunk is refused 503"
