#!/usr/bin/env bash
# cold_store_suite.sh conformance|http DSTREAM_BINARY [ARG...]: run under
# with_s3rver.sh, a whole suite whose servers keep their cold tier in the
# bucket, with a 1 MiB hot tier, so that chunks and snapshots really move
# through S3:
#   conformance  tests/conformance/run.sh (a durable server; DSTREAM_EXTRA_ARGS)
#   http         the HTTP suite (tests/http, node --test ARG...: the files),
#                every server durable (DSTREAM_TEST_DURABLE, DSTREAM_TEST_SERVER_ARGS);
#                each file within DSTREAM_TEST_FILE_MS (default 120000)
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
[[ $# -ge 2 ]] || { echo "usage: $0 conformance|http DSTREAM_BINARY [ARG...]" >&2; exit 2; }
suite=$1 bin=$2
shift 2
: "${DSTREAM_TEST_S3_ENDPOINT:?run under tests/s3/with_s3rver.sh}"
cold="--cold-store s3://$DSTREAM_TEST_S3_BUCKET/$suite --s3-endpoint $DSTREAM_TEST_S3_ENDPOINT --hot-bytes 1MiB"
case $suite in
    conformance)
        DSTREAM_EXTRA_ARGS="$cold" exec bash "$here/../conformance/run.sh" "$bin" durable ;;
    http)
        cd "$here/../http"
        DSTREAM_BIN=$bin NO_COLOR=1 DSTREAM_TEST_DURABLE=1 DSTREAM_TEST_SERVER_ARGS="$cold" \
            exec node --test --test-reporter="$here/../support/failures_last.mjs" --test-timeout="${DSTREAM_TEST_FILE_MS:-120000}" "$@" ;;
    *) echo "$0: no suite $suite" >&2; exit 2 ;;
esac
