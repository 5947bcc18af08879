#!/usr/bin/env bash
# Makes the certificates of the TLS tests in DIR, with openssl:
#
#   ca.pem                 a self-signed root, the only thing clients trust
#   a.pem a.key            a server certificate for 127.0.0.1 and localhost,
#   b.pem b.key            and another one: each file holds the leaf, then an
#                          intermediate (a chain: the root alone verifies it)
#   other.key              a key that matches neither
#
#   make_certs.sh DIR
set -euo pipefail
[[ $# -eq 1 ]] || { echo "usage: $0 DIR" >&2; exit 2; }
DIR=$1
mkdir -p "$DIR"
cd "$DIR"
command -v openssl >/dev/null || { echo "make_certs: openssl is not installed (scripts/install-deps)" >&2; exit 1; }

key() { openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256 -out "$1" 2>/dev/null; }

key ca.key
openssl req -x509 -new -key ca.key -sha256 -days 30 -subj "/CN=dstream test root" \
    -addext "basicConstraints=critical,CA:true" -addext "keyUsage=critical,keyCertSign,cRLSign" \
    -out ca.pem 2>/dev/null

key intermediate.key
openssl req -new -key intermediate.key -subj "/CN=dstream test intermediate" -out intermediate.csr 2>/dev/null
printf 'basicConstraints=critical,CA:true,pathlen:0\nkeyUsage=critical,keyCertSign,cRLSign\n' >intermediate.ext
openssl x509 -req -in intermediate.csr -CA ca.pem -CAkey ca.key -CAcreateserial -days 30 -sha256 \
    -extfile intermediate.ext -out intermediate.pem 2>/dev/null

printf 'basicConstraints=CA:false\nkeyUsage=critical,digitalSignature\nextendedKeyUsage=serverAuth\nsubjectAltName=IP:127.0.0.1,DNS:localhost\n' >leaf.ext
for name in a b; do
    key "$name.key"
    openssl req -new -key "$name.key" -subj "/CN=dstream test server $name" -out "$name.csr" 2>/dev/null
    openssl x509 -req -in "$name.csr" -CA intermediate.pem -CAkey intermediate.key -CAcreateserial \
        -days 30 -sha256 -extfile leaf.ext -out "$name.leaf.pem" 2>/dev/null
    cat "$name.leaf.pem" intermediate.pem >"$name.pem"
done
key other.key
rm -f ./*.csr ./*.ext ./*.srl
