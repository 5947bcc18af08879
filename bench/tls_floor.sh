#!/usr/bin/env bash
# Server CPU per append over TLS: dstream (--memory) beside nginx terminating
# TLS with the same certificate and doing nothing else (it answers a POST 204
# from its config, as bench/nginx_floor.conf does in clear), over HTTP/1.1
# and over HTTP/2, in the same run. The load is h2load (Debian's
# nghttp2-client): CLIENTS connections, each sending REQUESTS/CLIENTS appends
# of a BODY_BYTES body one after the other on HTTP/1.1, and STREAMS at once
# on HTTP/2. CPU is the server process's user + system time over the run
# (/proc/PID/stat), divided by the appends answered.
#
#   bench/tls_floor.sh [PATH-TO-DSTREAM]
#   REQUESTS=200000 CLIENTS=16 STREAMS=8 BODY_BYTES=64 ROUNDS=3 bench/tls_floor.sh
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
BIN=${1:-$ROOT/build/dstream}
REQUESTS=${REQUESTS:-200000}
CLIENTS=${CLIENTS:-16}
STREAMS=${STREAMS:-8}
BODY_BYTES=${BODY_BYTES:-64}
ROUNDS=${ROUNDS:-3}
for tool in h2load nginx curl openssl; do
    command -v "$tool" >/dev/null || [[ -x /usr/sbin/$tool ]] ||
        { echo "tls_floor: $tool is missing (apt-get install nghttp2-client nginx curl openssl)" >&2; exit 1; }
done
NGINX=$(command -v nginx || echo /usr/sbin/nginx)

DIR=$(mktemp -d "${TMPDIR:-/tmp}/dstream-tls-floor.XXXXXX")
PIDS=()
cleanup() {
    for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
    wait 2>/dev/null || true
    rm -rf "$DIR"
}
trap cleanup EXIT

bash "$ROOT/tests/tls/make_certs.sh" "$DIR/certs"
free_port() { node -e 's=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})'; }
NGINX_PORT=$(free_port)
DSTREAM_PORT=$(free_port)

# nginx: the floor's config with TLS 1.2/1.3, the same certificate, h2 by ALPN.
mkdir -p "$DIR/nginx"
cat >"$DIR/nginx/nginx.conf" <<EOF
daemon off;
master_process off;
worker_processes 1;
pid $DIR/nginx/nginx.pid;
error_log $DIR/nginx/error.log warn;
events { worker_connections 4096; }
http {
    access_log off;
    client_body_temp_path $DIR/nginx/body;
    proxy_temp_path $DIR/nginx/proxy;
    fastcgi_temp_path $DIR/nginx/fastcgi;
    uwsgi_temp_path $DIR/nginx/uwsgi;
    scgi_temp_path $DIR/nginx/scgi;
    keepalive_requests 1000000;
    keepalive_timeout 60s;
    http2_max_requests 1000000;
    server {
        listen 127.0.0.1:$NGINX_PORT ssl http2 reuseport;
        ssl_certificate $DIR/certs/a.pem;
        ssl_certificate_key $DIR/certs/a.key;
        ssl_protocols TLSv1.2 TLSv1.3;
        ssl_session_tickets on;
        client_max_body_size 64m;
        client_body_buffer_size 64k;
        location / {
            add_header Stream-Next-Offset 00000000000000001024 always;
            return 204;
        }
    }
}
EOF
"$NGINX" -p "$DIR/nginx" -c "$DIR/nginx/nginx.conf" >"$DIR/nginx.log" 2>&1 &
PIDS+=($!)
NGINX_PID=$!

mkdir -p "$DIR/data"
"$BIN" serve --memory --listen "127.0.0.1:$DSTREAM_PORT" --admin-listen off --data-dir "$DIR/data" \
    --tls-cert "$DIR/certs/a.pem" --tls-key "$DIR/certs/a.key" >"$DIR/dstream.log" 2>&1 &
PIDS+=($!)
DSTREAM_PID=$!

for port in "$NGINX_PORT" "$DSTREAM_PORT"; do
    for _ in $(seq 100); do
        curl -s -o /dev/null --cacert "$DIR/certs/ca.pem" "https://127.0.0.1:$port/" && break
        sleep 0.1
    done
done
curl -s -f -o /dev/null --cacert "$DIR/certs/ca.pem" -X PUT -H 'Content-Type: text/plain' \
    "https://127.0.0.1:$DSTREAM_PORT/v1/stream/tls-floor"
head -c "$BODY_BYTES" /dev/zero | tr '\0' 'x' >"$DIR/body"

ticks_per_second=$(getconf CLK_TCK)
cpu_ticks() { awk '{ print $14 + $15 }' "/proc/$1/stat"; }

# One load run; prints the server CPU µs per append and appends/s.
run() {  # server pid port protocol count
    local pid=$2 port=$3 proto=$4 n=$5 args=(-c "$CLIENTS")
    if [[ $proto == h1 ]]; then args+=(--h1 -m 1); else args+=(-m "$STREAMS"); fi
    local before after out
    before=$(cpu_ticks "$pid")
    out=$(h2load -n "$n" "${args[@]}" -d "$DIR/body" -H 'Content-Type: text/plain' \
        "https://127.0.0.1:$port/v1/stream/tls-floor" 2>&1)
    after=$(cpu_ticks "$pid")
    local ok rps
    ok=$(awk '/^requests:/ { print $8 }' <<<"$out")
    rps=$(awk '/^finished in/ { print $4 }' <<<"$out")
    local twoxx
    twoxx=$(awk '/^status codes:/ { print $3 }' <<<"$out")
    if [[ "$ok" != "$n" || "$twoxx" != "$n" ]]; then
        echo "tls_floor: $1 $proto: $ok of $n succeeded, $twoxx 2xx" >&2
        echo "$out" >&2
        exit 1
    fi
    awk -v d=$((after - before)) -v hz="$ticks_per_second" -v n="$n" -v rps="$rps" \
        'BEGIN { printf "%.1f %s\n", d * 1e6 / hz / n, rps }'
}

echo "server CPU per append over TLS: $REQUESTS appends of $BODY_BYTES bytes, $CLIENTS connections" \
     "(HTTP/2: $STREAMS streams each), $ROUNDS rounds, best round"
printf '| protocol | server | appends/s | server CPU µs/append | × nginx |\n| --- | --- | --- | --- | --- |\n'
for proto in h1 h2; do
    declare -A best_cpu=() best_rps=()
    for server in nginx dstream; do
        pid=$NGINX_PID port=$NGINX_PORT
        [[ $server == dstream ]] && pid=$DSTREAM_PID port=$DSTREAM_PORT
        run "$server" "$pid" "$port" "$proto" 5000 >/dev/null  # warm-up
        for _ in $(seq "$ROUNDS"); do
            read -r cpu rps < <(run "$server" "$pid" "$port" "$proto" "$REQUESTS")
            if [[ -z "${best_cpu[$server]:-}" ]] || awk -v a="$cpu" -v b="${best_cpu[$server]}" 'BEGIN { exit !(a < b) }'; then
                best_cpu[$server]=$cpu
                best_rps[$server]=$rps
            fi
        done
    done
    for server in nginx dstream; do
        ratio=$(awk -v a="${best_cpu[$server]}" -v b="${best_cpu[nginx]}" 'BEGIN { printf "%.2f", a / b }')
        name=HTTP/1.1
        [[ $proto == h2 ]] && name=HTTP/2
        printf '| %s | %s | %s | %s | %s |\n' "$name" "$server" "${best_rps[$server]}" "${best_cpu[$server]}" "$ratio"
    done
    unset best_cpu best_rps
done
