#!/usr/bin/env bash
# Runs the upstream Durable Streams conformance suite against a dstream binary.
#
#   run.sh PATH-TO-DSTREAM memory|durable
#   run.sh - external          (DSTREAM_URL names a server someone else runs)
#
# Starts "$BIN serve --listen 127.0.0.1:PORT --data-dir TMPDIR [--memory]" on a
# free port, waits for it to answer, runs vitest with DSTREAM_URL pointing at it,
# then stops the server and removes the temp dir. Exits with vitest's status.
# Extra server flags may be passed in DSTREAM_EXTRA_ARGS (word-split).
# DSTREAM_TLS=1 serves HTTPS: a certificate chain made for the run
# (tests/tls/make_certs.sh), its root trusted by Node (NODE_EXTRA_CA_CERTS)
# and curl. DSTREAM_HTTP2=1 (with DSTREAM_TLS=1) has the suite's fetch speak
# HTTP/2, and checks afterwards in the server's metrics that it did.
set -euo pipefail

usage() {
    echo "usage: $0 PATH-TO-DSTREAM memory|durable, or $0 - external with DSTREAM_URL" >&2
    exit 2
}

[[ $# -eq 2 ]] || usage
BIN=$1
MODE=$2
case "$MODE" in
    memory | durable) ;;
    external) [[ -n "${DSTREAM_URL:-}" ]] || usage ;;
    *) usage ;;
esac

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cd "$HERE"

if [[ "$MODE" != external && ! -x "$BIN" ]]; then
    echo "conformance: server binary '$BIN' does not exist or is not executable" >&2
    exit 1
fi
command -v node >/dev/null || { echo "conformance: node is not installed (run scripts/install-deps)" >&2; exit 1; }
command -v curl >/dev/null || { echo "conformance: curl is not installed (run scripts/install-deps)" >&2; exit 1; }

if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
    echo "conformance: installing node modules (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
fi

# Starts "$BIN serve" on a free port of 127.0.0.1 and sets URL; the EXIT trap
# stops it and removes its directory.
start_server() {
    # Ask the kernel for a free port. There is a small window between closing this
    # socket and the server binding it; the readiness check below catches a loss.
    PORT=$(node -e '
    const s = require("net").createServer();
    s.listen(0, "127.0.0.1", () => { console.log(s.address().port); s.close(); });
    ')
    [[ "$PORT" =~ ^[0-9]+$ ]] || { echo "conformance: could not pick a free port (got '$PORT')" >&2; exit 1; }

    DIR=$(mktemp -d "${TMPDIR:-/tmp}/dstream-conformance.XXXXXX")
    LOG="$DIR/server.log"
    SERVER_PID=""

    # shellcheck disable=SC2317  # invoked from the EXIT trap
    cleanup() {
        local rc=$?
        if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
            kill -TERM "$SERVER_PID" 2>/dev/null || true
            for _ in $(seq 50); do
                kill -0 "$SERVER_PID" 2>/dev/null || break
                sleep 0.1
            done
            kill -KILL "$SERVER_PID" 2>/dev/null || true
            wait "$SERVER_PID" 2>/dev/null || true
        fi
        if [[ $rc -ne 0 && -e "$LOG" ]]; then
            if [[ -s "$LOG" ]]; then
                echo "conformance: last 50 lines of the server log:" >&2
                tail -n 50 "$LOG" >&2 || true
            else
                echo "conformance: the server log is empty" >&2
            fi
        fi
        rm -rf "$DIR"
        exit "$rc"
    }
    trap cleanup EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM

    ARGS=(serve --listen "127.0.0.1:$PORT" --data-dir "$DIR/data" --admin-listen off)
    SCHEME=http
    CURL_TLS=()
    if [[ "${DSTREAM_TLS:-}" == 1 ]]; then
        bash "$HERE/../tls/make_certs.sh" "$DIR/tls"
        ARGS+=(--tls-cert "$DIR/tls/a.pem" --tls-key "$DIR/tls/a.key")
        SCHEME=https
        CURL_TLS=(--cacert "$DIR/tls/ca.pem")
        export NODE_EXTRA_CA_CERTS="$DIR/tls/ca.pem"
    fi
    [[ "$MODE" == memory ]] && ARGS+=(--memory)
    # shellcheck disable=SC2206
    [[ -n "${DSTREAM_EXTRA_ARGS:-}" ]] && ARGS+=($DSTREAM_EXTRA_ARGS)

    mkdir -p "$DIR/data"
    echo "conformance: starting $BIN ${ARGS[*]} ($MODE mode)"
    "$BIN" "${ARGS[@]}" >"$LOG" 2>&1 &
    SERVER_PID=$!

    URL="$SCHEME://127.0.0.1:$PORT"
    now_us() { echo "${EPOCHREALTIME/[.,]/}"; }
    deadline=$(($(now_us) + 10000000))
    until curl -s -o /dev/null --max-time 1 "${CURL_TLS[@]}" "$URL/"; do
        if ! kill -0 "$SERVER_PID" 2>/dev/null; then
            set +e
            wait "$SERVER_PID"
            status=$?
            set -e
            SERVER_PID=""
            echo "conformance: server exited with status $status before answering on $URL" >&2
            exit 1
        fi
        if (($(now_us) >= deadline)); then
            echo "conformance: server did not answer on $URL within 10 s" >&2
            exit 1
        fi
        sleep 0.1
    done
    echo "conformance: server is up at $URL (pid $SERVER_PID)"
}

if [[ "$MODE" == external ]]; then
    URL=$DSTREAM_URL
    echo "conformance: against the server at $URL"
else
    start_server
fi

# ctest captures the output: keep it free of colour escapes.
if [[ ! -t 1 && -z "${FORCE_COLOR:-}" ]]; then
    export NO_COLOR=1
fi

# DSTREAM_CONFORMANCE_EXCLUDE: a regex of suite groups left out of this run
# (the Fork groups until stream forks land, issue "Stream forks and soft delete").
FILTER=()
if [[ -n "${DSTREAM_CONFORMANCE_EXCLUDE:-}" ]]; then
    echo "conformance: leaving out groups matching /${DSTREAM_CONFORMANCE_EXCLUDE}/"
    FILTER=(--testNamePattern "^(?!${DSTREAM_CONFORMANCE_EXCLUDE})")
fi

# A JSON report beside the default one: on failure its failed tests are printed
# last, where a log cut to its first and last lines still shows them.
RESULTS=$(mktemp "${TMPDIR:-/tmp}/dstream-conformance-results.XXXXXX.json")
set +e
DSTREAM_URL="$URL" npx --no-install vitest run --config vitest.config.mjs "${FILTER[@]}" \
    --reporter=default --reporter=json --outputFile.json="$RESULTS"
status=$?
set -e
if [[ $status -ne 0 ]]; then
    node "$HERE/failed_tests.mjs" "$RESULTS" || true
fi
rm -f "$RESULTS"
# The suite must have spoken the protocol the run claims: requests counted by
# version (dstream_http_protocol_requests_total).
if [[ "$MODE" != external && ( "${DSTREAM_TLS:-}" == 1 || "${DSTREAM_HTTP2:-}" == 1 ) ]]; then
    version=1.1
    [[ "${DSTREAM_HTTP2:-}" == 1 ]] && version=2
    tls=false
    [[ "${DSTREAM_TLS:-}" == 1 ]] && tls=true
    count=$(curl -s "${CURL_TLS[@]}" "$URL/__ursula/metrics" |
        awk -v want="dstream_http_protocol_requests_total{version=\"$version\",tls=\"$tls\"}" '$1 == want { print $2 }')
    echo "conformance: requests over HTTP/$version (tls=$tls): ${count:-0}"
    if [[ -z "$count" || "$count" -lt 300 ]]; then
        echo "conformance: expected the suite's requests (300 or more) over HTTP/$version with tls=$tls" >&2
        [[ $status -eq 0 ]] && status=1
    fi
fi
exit "$status"
