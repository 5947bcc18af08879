#!/usr/bin/env bash
# What the S3 server alone serves: the floor of a catch-up from S3-backed
# cold chunks (bench/compare.sh --servers dstream-s3). Run under
# tests/s3/with_s3rver.sh:
#
#   tests/s3/with_s3rver.sh bench/s3rver_floor.sh [--stream-bytes S] [--readers R]
#
# Puts S bytes (default 256 MiB) as 4 MiB objects, the chunk size, then R
# readers (default 4) each GET every object in order with curl, at once, as
# the catch-up scenario's readers read one stream. Prints one line: the bytes
# read, the seconds, the MB/s over all readers.
set -euo pipefail
STREAM_BYTES=$((256 << 20))
READERS=4
while [[ $# -gt 0 ]]; do
    case $1 in
        --stream-bytes) STREAM_BYTES=$2; shift 2 ;;
        --readers) READERS=$2; shift 2 ;;
        *) echo "usage: $0 [--stream-bytes S] [--readers R]" >&2; exit 2 ;;
    esac
done
: "${DSTREAM_TEST_S3_ENDPOINT:?run under tests/s3/with_s3rver.sh}"
chunk=$((4 << 20))
objects=$(((STREAM_BYTES + chunk - 1) / chunk))
base="$DSTREAM_TEST_S3_ENDPOINT/$DSTREAM_TEST_S3_BUCKET/floor"
work=$(mktemp -d /tmp/dstream-s3-floor.XXXXXX)
trap 'rm -rf "$work"' EXIT
head -c "$chunk" /dev/urandom >"$work/chunk"
sign=(--aws-sigv4 "aws:amz:us-east-1:s3" -u "$AWS_ACCESS_KEY_ID:$AWS_SECRET_ACCESS_KEY"
      -H "x-amz-content-sha256: UNSIGNED-PAYLOAD")
for i in $(seq "$objects"); do
    curl -sf "${sign[@]}" -X PUT --data-binary @"$work/chunk" "$base/$i" -o /dev/null
done
reader() {
    local args=()
    for i in $(seq "$objects"); do args+=("$base/$i" -o /dev/null); done
    curl -sf "${sign[@]}" -w '%{size_download}\n' "${args[@]}" | awk '{ n += $1 } END { print n }'
}
start=${EPOCHREALTIME/[.,]/}
for r in $(seq "$READERS"); do reader >"$work/read.$r" & done
wait
end=${EPOCHREALTIME/[.,]/}
total=$(cat "$work"/read.* | awk '{ n += $1 } END { print n }')
awk -v b="$total" -v us="$((end - start))" -v r="$READERS" -v o="$objects" \
    'BEGIN { printf "s3rver floor: %d readers x %d objects of 4 MiB, %d bytes in %.2f s: %.1f MB/s\n", r, o, b, us / 1e6, b / us }'
