#!/usr/bin/env bash
# http_suite.sh DSTREAM_BINARY [FILE...]: run under tests/s3/with_s3rver.sh,
# the HTTP suite (tests/http) through a follower of a 3-node cluster of one
# group: each file's startServer() starts a cluster (DSTREAM_TEST_CLUSTER=1,
# tests/http/lib/server.mjs), every write is redirected to the leader and the
# tests' fetch follows redirects with any body. FILE... (names in tests/http)
# default to every file of `included`; each file within DSTREAM_TEST_FILE_MS
# (default 120000). README.md.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -ge 1 ]] || { echo "usage: $0 DSTREAM_BINARY [FILE...]" >&2; exit 2; }
bin=$1
shift
: "${DSTREAM_TEST_S3_ENDPOINT:?run under tests/s3/with_s3rver.sh}"

# The files that test protocol behaviour: through a follower they must pass.
included=(
    buckets caching cold_reads cors early_answer errors forks immutable incarnation
    limits live_end live_fanout metadata producers readpath router snapshots surfaces
)
# The files of single-node machinery, with the reason each is left out.
declare -A excluded=(
    [admission]="per-process admission bounds (--ingress-body-bytes, --max-live-reads, read quotas) of the node a socket reaches"
    [cli]="the dstream client commands, which do not follow a 307 (src/cli/client): a client feature, not the server's protocol"
    [hostile]="slow and flooding clients against one process's timeouts, RSS and descriptor limit (fileLimit)"
    [http11]="HTTP/1.1 framing and connection hygiene of one listener, over raw sockets that follow no redirect"
    [metrics]="the Prometheus metrics and access log of one process (single-node gauges, --groups, memory nodes)"
    [operator]="/__ursula/health and /ready of one node; the cluster's operator routes are tests/cluster/basic.test.mjs's"
    [shutdown]="SIGTERM/SIGINT drain and exit codes of one process (signal(), waitExit(), restart())"
    [snapshot_parts]="GiB of staged parts through the bucket (own budget in s3_http_snapshot_parts) and test-owned data dirs for the sweep"
)

files=("$@")
if [[ ${#files[@]} -eq 0 ]]; then
    files=("${included[@]}")
    for f in "${!excluded[@]}"; do echo "http_suite: left out $f.test.mjs: ${excluded[$f]}"; done | sort
fi
paths=()
for f in "${files[@]}"; do
    f=${f%.test.mjs}
    f=${f##*/}
    [[ -f $here/../http/$f.test.mjs ]] || { echo "$0: no tests/http/$f.test.mjs" >&2; exit 2; }
    paths+=("$here/../http/$f.test.mjs")
done

cd "$here/../http"
DSTREAM_BIN=$bin NO_COLOR=1 DSTREAM_TEST_CLUSTER=1 \
    exec node --test --test-reporter="$here/../support/failures_last.mjs" --test-timeout="${DSTREAM_TEST_FILE_MS:-120000}" "${paths[@]}"
