#!/usr/bin/env bash
# Runs client.test.mjs (the official TypeScript client against the binary in
# DSTREAM_BIN), installing the pinned node modules first when they are missing
# or older than package-lock.json.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
if [[ ! -d node_modules || package-lock.json -nt node_modules/.package-lock.json ]]; then
    echo "client: installing node modules (npm ci)"
    npm ci --no-audit --no-fund --loglevel=error
fi
# --test-timeout (per file in Node 20): a wait of the official client that
# never ends fails the run by name before ctest's bound.
exec node --test --test-reporter=../support/failures_last.mjs --test-timeout=90000 client.test.mjs
