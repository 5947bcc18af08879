#!/usr/bin/env bash
# A node whose cold tier is an S3 bucket (run under with_s3rver.sh): with a
# 1 MiB hot tier, 12 MiB appended to one stream go to the bucket as chunks,
# under the node's own prefix, and read back identical after a SIGKILL and a
# restart.
#   cold_store_restart.sh DSTREAM_BINARY
set -euo pipefail
bin=$1
source "$(dirname "${BASH_SOURCE[0]}")/s3_node.sh"

start_node restart
append_random "$url/s3-restart/stream" 12
# The three full 4 MiB chunks, in the bucket under restart/<cluster id>/chunks/.
wait_for_chunks restart 3
chunks=$(chunks_in_bucket restart)

kill -9 "$pid"; wait "$pid" 2>/dev/null || true; pid=""
start_node restart
"$bin" read "$url/s3-restart/stream" >"$work/read"
cmp -s "$work/written" "$work/read" || fail "the bytes read back after the restart differ"
echo "ok: $chunks chunk objects in the bucket; 12 MiB read back identical after SIGKILL and restart"
