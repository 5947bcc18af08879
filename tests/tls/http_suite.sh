#!/usr/bin/env bash
# Our HTTP suite (tests/http, but the snapshot parts' file) over HTTPS: every
# server it starts gets a certificate made for the run (make_certs.sh), and
# fetch, raw connections and the client commands trust its root.
#
#   DSTREAM_BIN=build/dstream tests/tls/http_suite.sh [--h2]
#
# --h2: the suite's fetch offers h2 by ALPN (h2_fetch.mjs), so that its
# requests are HTTP/2; raw connections stay HTTP/1.1 over TLS.
set -euo pipefail
HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
preload=()
case "${1:-}" in
    "") ;;
    --h2)
        preload=(--import "$HERE/h2_fetch.mjs")
        export DSTREAM_TEST_HTTP2=1
        ;;
    *) echo "usage: $0 [--h2]" >&2; exit 2 ;;
esac
DIR=$(mktemp -d "${TMPDIR:-/tmp}/dstream-http-tls.XXXXXX")
trap 'rm -rf "$DIR"' EXIT
bash "$HERE/make_certs.sh" "$DIR"
export DSTREAM_TEST_TLS_DIR=$DIR
export NODE_EXTRA_CA_CERTS=$DIR/ca.pem
export DSTREAM_CACERT=$DIR/ca.pem
files=()
for f in "$HERE"/../http/*.test.mjs; do
    [[ $(basename "$f") == snapshot_parts.test.mjs ]] || files+=("$f")
done
node "${preload[@]}" --test --test-reporter="$HERE/../support/failures_last.mjs" --test-timeout=120000 "${files[@]}"
