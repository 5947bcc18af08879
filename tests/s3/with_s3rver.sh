#!/usr/bin/env bash
# with_s3rver.sh [--bucket NAME] COMMAND [ARG...]: COMMAND beside s3rver on
# loopback (see with_s3rver.mjs for the environment it gets; README.md).
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
if [[ ! -d $here/node_modules/s3rver ]]; then
    echo "with_s3rver: $here/node_modules has no s3rver: run scripts/install-deps" >&2
    exit 1
fi
# s3rver's continuation tokens are DES-encrypted, a cipher OpenSSL 3 (under
# Node 17 and later) keeps in its legacy provider.
exec node --openssl-legacy-provider "$here/with_s3rver.mjs" "$@"
