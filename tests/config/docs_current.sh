#!/usr/bin/env bash
# Fails when docs/configuration.md is not what `dstream config docs` prints,
# so the settings docs cannot drift from the settings table.
#
#   docs_current.sh PATH-TO-DSTREAM PATH-TO-configuration.md
set -euo pipefail
[[ $# -eq 2 ]] || { echo "usage: $0 PATH-TO-DSTREAM PATH-TO-configuration.md" >&2; exit 2; }
if ! diff -u "$2" <("$1" config docs); then
    echo "docs/configuration.md differs from \`dstream config docs\` (diff above); regenerate it:" >&2
    echo "  build/dstream config docs > docs/configuration.md" >&2
    exit 1
fi
echo "docs/configuration.md matches \`dstream config docs\`"
