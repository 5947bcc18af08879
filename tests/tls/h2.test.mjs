// HTTP/2 (RFC 9113): h2c with prior knowledge on the plain listener and h2
// by ALPN over TLS, served by the same handlers as HTTP/1.1 (the same
// statuses, headers and bodies), many SSE streams on one connection, flow
// control (a paused reader's stream waits while the others flow), 413 before
// the body, and hostile clients: floods of PING, SETTINGS, reset streams and
// CONTINUATION, a window that never opens, a body that never comes. Each is
// refused with the connection closed and counted, and other clients go on.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import http from 'node:http';
import http2 from 'node:http2';
import https from 'node:https';
import net from 'node:net';
import { once } from 'node:events';
import tls from 'node:tls';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../http/lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const certs = mkdtempSync(path.join(os.tmpdir(), 'dstream-h2-'));
execFileSync('bash', [path.join(here, 'make_certs.sh'), certs]);
after(() => rmSync(certs, { recursive: true, force: true }));
const ca = readFileSync(path.join(certs, 'ca.pem'));
const tlsArgs = ['--tls-cert', path.join(certs, 'a.pem'), '--tls-key', path.join(certs, 'a.key')];
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// One request on an HTTP/2 session: {status, headers, body}.
function h2request(session, headers, body) {
    return new Promise((resolve, reject) => {
        const req = session.request(headers, { endStream: body === undefined });
        const chunks = [];
        let head;
        req.on('response', (h) => { head = h; });
        req.on('data', (c) => chunks.push(c));
        req.on('end', () => resolve({ status: head[':status'], headers: head, body: Buffer.concat(chunks).toString() }));
        req.on('error', reject);
        if (body !== undefined) req.end(body);
    });
}

// One HTTP/1.1 request (https checked against the test root): {status, headers, body}.
function h1request(url, { method, headers, body }) {
    const lib = url.startsWith('https:') ? https : http;
    return new Promise((resolve, reject) => {
        const req = lib.request(url, { method, headers, ca, agent: false }, (res) => {
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode, headers: res.headers,
                                          body: Buffer.concat(chunks).toString() }));
        });
        req.on('error', reject);
        req.end(body);
    });
}

async function metric(url, name, labels) {
    const text = await (await fetch(`${url}/__ursula/metrics`)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
    return line ? Number(line.split(' ')[1]) : 0;
}

// The answer's fields, but those of the HTTP/1.1 connection and the
// Content-Length of a 204 (RFC 9110 8.6: none may be sent; HTTP/1.1 says 0).
function comparable(headers, status) {
    const out = {};
    for (const [k, v] of Object.entries(headers)) {
        const name = k.toLowerCase();
        if (name.startsWith(':') || ['connection', 'keep-alive', 'transfer-encoding', 'date'].includes(name)) continue;
        if (name === 'content-length' && status === 204) continue;
        out[name] = name === 'ursula-cluster-id' ? 'x' : String(v);
    }
    return out;
}

test('h2c and h2 by ALPN answer as HTTP/1.1 does: statuses, headers and bodies', async () => {
    const srv = await startServer({ extraArgs: [] });
    const tlsSrv = await startServer({ extraArgs: tlsArgs, ca });
    try {
        for (const [label, base, options] of [['h2c', srv.url, {}], ['h2', tlsSrv.url, { ca }]]) {
            const session = http2.connect(base, options);
            await new Promise((resolve, reject) => { session.once('connect', resolve); session.once('error', reject); });
            if (label === 'h2') assert.equal(session.alpnProtocol, 'h2');
            const steps = [
                [{ ':method': 'PUT', ':path': `/v1/stream/${label}-a`, 'content-type': 'text/plain' }],
                [{ ':method': 'POST', ':path': `/v1/stream/${label}-a`, 'content-type': 'text/plain' }, 'hello '],
                [{ ':method': 'POST', ':path': `/v1/stream/${label}-a`, 'content-type': 'text/plain' }, 'world'],
                [{ ':method': 'GET', ':path': `/v1/stream/${label}-a?offset=-1` }],
                [{ ':method': 'HEAD', ':path': `/v1/stream/${label}-a` }],
                [{ ':method': 'GET', ':path': `/v1/stream/${label}-missing?offset=-1` }],
                [{ ':method': 'POST', ':path': `/v1/stream/${label}-a`, 'content-type': 'application/json' }, '{}'],
            ];
            const h1 = label === 'h2c' ? srv.url : tlsSrv.url;
            for (const [headers, body] of steps) {
                const got = await h2request(session, headers, body);
                // The same request over HTTP/1.1 on a twin stream.
                const twinPath = headers[':path'].replace(`${label}-a`, `${label}-b`).replace(`${label}-missing`, `${label}-missing`);
                const res = await h1request(`${h1}${twinPath}`, {
                    method: headers[':method'],
                    headers: headers['content-type'] ? { 'content-type': headers['content-type'] } : {},
                    body,
                });
                assert.equal(got.status, res.status, `${label} ${headers[':method']} ${headers[':path']}`);
                assert.equal(got.body, res.body);
                const h1headers = comparable(res.headers, res.status);
                const h2headers = comparable(got.headers, got.status);
                // Offsets and incarnations differ between the two streams; the names do not.
                assert.deepEqual(Object.keys(h2headers).sort(), Object.keys(h1headers).sort(),
                                 `${label} ${headers[':method']} ${headers[':path']}`);
            }
            session.close();
        }
        assert.ok(await metric(srv.url, 'dstream_http_protocol_requests_total', 'version="2",tls="false"') >= 7);
    } finally {
        await srv.stop();
        await tlsSrv.stop();
    }
});

for (const label of ['h2c', 'h2']) {
    test(`${label}: frames a paused reader cannot take at once arrive whole and in order`, { timeout: 60_000 }, async () => {
        // The writer sends its frames at once (over TLS, encrypted first);
        // while the client reads nothing the socket fills, and what it did
        // not take goes out before the next frames once the client reads again.
        const srv = await startServer({ extraArgs: label === 'h2' ? tlsArgs : [], ca });
        try {
            const content = Buffer.alloc(60_000);
            for (let i = 0; i < content.length; i++) content[i] = 97 + ((i * 7 + (i >> 9)) % 26);
            const url = new URL(srv.url);
            let socket;
            if (label === 'h2') {
                socket = tls.connect({ host: url.hostname, port: Number(url.port), ca, ALPNProtocols: ['h2'],
                                       servername: url.hostname === '127.0.0.1' ? undefined : url.hostname });
                await once(socket, 'secureConnect');
                assert.equal(socket.alpnProtocol, 'h2');
            } else {
                socket = net.connect({ host: url.hostname, port: Number(url.port) });
                await once(socket, 'connect');
            }
            // Windows wide enough that flow control never stops the server:
            // only the paused socket does.
            const session = http2.connect(srv.url, { createConnection: () => socket,
                                                     settings: { initialWindowSize: 8 << 20 } });
            await once(session, 'connect');
            session.setLocalWindowSize(256 << 20);
            const path = `/v1/stream/${label}-paused`;
            assert.equal((await h2request(session, { ':method': 'PUT', ':path': path,
                                                     'content-type': 'application/octet-stream' },
                                          content)).status, 201);
            socket.pause();
            const reads = [];
            for (let i = 0; i < 80; i++) {
                reads.push(new Promise((resolve, reject) => {
                    const req = session.request({ ':method': 'GET', ':path': `${path}?offset=-1` });
                    const chunks = [];
                    req.on('data', (c) => chunks.push(c));
                    req.on('end', () => resolve(Buffer.concat(chunks)));
                    req.on('error', reject);
                }));
            }
            await sleep(500);
            socket.resume();
            const bodies = await Promise.all(reads);
            bodies.forEach((body, i) => assert.ok(body.equals(content), `answer ${i} differs (${body.length} bytes)`));
            // The session still serves a request after.
            const again = await h2request(session, { ':method': 'GET', ':path': `${path}?offset=-1` });
            assert.equal(again.body, content.toString());
            session.close();
        } finally {
            await srv.stop();
        }
    });
}

test('fields that change with every write go as never-indexed literals; the common ones do not', async () => {
    // HPACK (RFC 7541): an offset entered in the table would never be sent
    // again; it only pushes out the fields every answer repeats.
    const srv = await startServer({ extraArgs: [] });
    try {
        const session = http2.connect(srv.url);
        await once(session, 'connect');
        const path = '/v1/stream/h2-hpack';
        const headers = { ':method': 'POST', ':path': path, 'content-type': 'text/plain' };
        assert.equal((await h2request(session, { ...headers, ':method': 'PUT' })).status, 201);
        for (let i = 0; i < 3; i++) {
            const got = await h2request(session, headers, `write ${i}`);
            assert.equal(got.status, 204);
            const neverIndexed = got.headers[http2.sensitiveHeaders] ?? [];
            for (const name of ['stream-next-offset', 'stream-incarnation']) {
                assert.ok(neverIndexed.includes(name), `${name} not sent never-indexed: ${neverIndexed}`);
            }
            for (const name of ['server', 'ursula-protocol', 'ursula-cluster-id']) {
                assert.ok(name in got.headers, `${name} missing`);
                assert.ok(!neverIndexed.includes(name), `${name} sent never-indexed`);
            }
        }
        session.close();
    } finally {
        await srv.stop();
    }
});

test('the access log and the metrics name the protocol', async () => {
    const srv = await startServer({ extraArgs: ['--access-log'] });
    try {
        const session = http2.connect(srv.url);
        assert.equal((await h2request(session, { ':method': 'GET', ':path': '/__ursula/health' })).status, 200);
        session.close();
        assert.equal((await fetch(`${srv.url}/__ursula/health`)).status, 200);
        const deadline = Date.now() + 5000;
        while (!/target=\/__ursula\/health status=200 .*protocol=HTTP\/1\.1 tls=no/.test(srv.log())) {
            assert.ok(Date.now() < deadline, `an HTTP/1.1 access line:\n${srv.log()}`);
            await sleep(20);
        }
        assert.match(srv.log(), /target=\/__ursula\/health status=200 .*protocol=HTTP\/2 tls=no/);
        assert.equal(await metric(srv.url, 'dstream_http_protocol_requests_total', 'version="2",tls="false"'), 1);
    } finally {
        await srv.stop();
    }
});

test('ten SSE streams on one connection all get every append; a paused reader does not hold the others', async () => {
    const srv = await startServer({ extraArgs: [] });
    try {
        const session = http2.connect(srv.url);
        const n = 10;
        for (let i = 0; i < n; i++) {
            const r = await h2request(session, { ':method': 'PUT', ':path': `/v1/stream/sse-${i}`, 'content-type': 'text/plain' });
            assert.equal(r.status, 201);
        }
        const readers = [];
        for (let i = 0; i < n; i++) {
            const req = session.request({ ':method': 'GET', ':path': `/v1/stream/sse-${i}?offset=-1&live=sse` });
            const reader = { text: '', req };
            req.setEncoding('utf8');
            req.on('data', (d) => { reader.text += d; });
            readers.push(reader);
        }
        for (let round = 0; round < 3; round++) {
            for (let i = 0; i < n; i++) {
                const r = await h2request(session, { ':method': 'POST', ':path': `/v1/stream/sse-${i}`, 'content-type': 'text/plain' }, `m${round}-${i}`);
                assert.equal(r.status, 204);
            }
        }
        const deadline = Date.now() + 10_000;
        while (!readers.every((r, i) => [0, 1, 2].every((round) => r.text.includes(`m${round}-${i}`)))) {
            assert.ok(Date.now() < deadline, 'every SSE stream got every append');
            await sleep(20);
        }
        for (const r of readers) r.req.close();

        // Flow control: a 2 MiB read left unread waits on its window while
        // another one on the same connection completes.
        const big = 'x'.repeat(2 * 1024 * 1024);
        await h2request(session, { ':method': 'PUT', ':path': '/v1/stream/big', 'content-type': 'text/plain' });
        assert.equal((await h2request(session, { ':method': 'POST', ':path': '/v1/stream/big', 'content-type': 'text/plain' }, big)).status, 204);
        const paused = session.request({ ':method': 'GET', ':path': '/v1/stream/big?offset=-1' });
        paused.pause();
        let pausedBytes = 0;
        await sleep(300);
        const other = await h2request(session, { ':method': 'GET', ':path': '/v1/stream/big?offset=-1' });
        assert.equal(other.body.length, big.length);
        paused.on('data', (d) => { pausedBytes += d.length; });
        await new Promise((resolve) => { paused.on('end', resolve); paused.resume(); });
        assert.equal(pausedBytes, big.length);
        session.close();
    } finally {
        await srv.stop();
    }
});

test('413 before the body, and a body past the limit', async () => {
    const srv = await startServer({ extraArgs: [] });
    try {
        const session = http2.connect(srv.url);
        await h2request(session, { ':method': 'PUT', ':path': '/v1/stream/limit', 'content-type': 'text/plain' });
        // A declared length over the limit: answered from the head, no body sent.
        const req = session.request({ ':method': 'POST', ':path': '/v1/stream/limit', 'content-type': 'text/plain',
                                      'content-length': String(64 * 1024 * 1024) }, { endStream: false });
        const status = await new Promise((resolve, reject) => {
            req.on('response', (h) => resolve(h[':status']));
            req.on('error', reject);
        });
        assert.equal(status, 413);
        req.close();
        // The connection goes on.
        const ok = await h2request(session, { ':method': 'POST', ':path': '/v1/stream/limit', 'content-type': 'text/plain' }, 'fine');
        assert.equal(ok.status, 204);
        session.close();
    } finally {
        await srv.stop();
    }
});

// ------------------------------------------------------------ raw frames

const preface = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
function frame(type, flags, stream, payload = Buffer.alloc(0)) {
    const head = Buffer.alloc(9);
    head.writeUIntBE(payload.length, 0, 3);
    head[3] = type;
    head[4] = flags;
    head.writeUInt32BE(stream, 5);
    return Buffer.concat([head, payload]);
}
const DATA = 0, HEADERS = 1, RST_STREAM = 3, SETTINGS = 4, PING = 6, GOAWAY = 7, CONTINUATION = 9;
const END_STREAM = 1, END_HEADERS = 4;
// HPACK: :method GET, :scheme http, :authority and :path as literals with
// indexed names, no Huffman (RFC 7541 6.2.2).
function requestBlock(pathname, method = 0x82) {
    const literal = (index, value) => Buffer.concat([Buffer.from([index, value.length]), Buffer.from(value)]);
    return Buffer.concat([Buffer.from([method, 0x86]), literal(0x01, '127.0.0.1'), literal(0x04, pathname)]);
}

// A raw h2c connection: resolves {socket, frames(), closed()} once connected.
function rawConnection(port) {
    return new Promise((resolve, reject) => {
        const socket = net.connect(port, '127.0.0.1');
        let buffered = Buffer.alloc(0);
        const frames = [];
        let closed = false;
        socket.on('data', (d) => {
            buffered = Buffer.concat([buffered, d]);
            while (buffered.length >= 9) {
                const length = buffered.readUIntBE(0, 3);
                if (buffered.length < 9 + length) break;
                frames.push({ type: buffered[3], flags: buffered[4], stream: buffered.readUInt32BE(5) & 0x7fffffff,
                              payload: buffered.subarray(9, 9 + length) });
                buffered = buffered.subarray(9 + length);
            }
        });
        socket.on('close', () => { closed = true; });
        socket.on('error', () => {});
        socket.on('connect', () => {
            socket.write(Buffer.concat([preface, frame(SETTINGS, 0, 0)]));
            resolve({ socket, frames, closed: () => closed });
        });
        socket.on('error', reject);
    });
}

async function waitClosed(conn, ms, what) {
    const deadline = Date.now() + ms;
    while (!conn.closed()) {
        assert.ok(Date.now() < deadline, `${what}: the server closed the connection within ${ms} ms`);
        await sleep(20);
    }
}

function goawayCode(conn) {
    const g = conn.frames.find((f) => f.type === GOAWAY);
    return g ? g.payload.readUInt32BE(4) : null;
}

const ENHANCE_YOUR_CALM = 0xb;

async function rss(pid) {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmRSS:\s+(\d+)/.exec(status)[1]) * 1024;
}

test('floods are refused: the connection closed, counted, and other clients served', async () => {
    const srv = await startServer({ extraArgs: [] });
    try {
        const floods = {
            ping_flood: () => Buffer.concat(Array.from({ length: 2000 }, () => frame(PING, 0, 0, Buffer.alloc(8)))),
            settings_flood: () => Buffer.concat(Array.from({ length: 2000 }, () => frame(SETTINGS, 0, 0))),
            rapid_reset: () => Buffer.concat(Array.from({ length: 1000 }, (_, i) => Buffer.concat([
                frame(HEADERS, END_HEADERS | END_STREAM, 2 * i + 1, requestBlock('/__ursula/health')),
                frame(RST_STREAM, 0, 2 * i + 1, Buffer.from([0, 0, 0, 8])),
            ]))),
            continuation_flood: () => Buffer.concat([
                frame(HEADERS, END_STREAM, 1, requestBlock('/__ursula/health')),
                ...Array.from({ length: 5000 }, () => frame(CONTINUATION, 0, 1, Buffer.from([0x40, 1, 0x78, 1, 0x79]))),
            ]),
        };
        const before = await rss(srv.pid);
        for (const [reason, bytes] of Object.entries(floods)) {
            const conn = await rawConnection(srv.port);
            conn.socket.write(bytes());
            await waitClosed(conn, 5000, reason);
            assert.equal(goawayCode(conn), ENHANCE_YOUR_CALM, reason);
            assert.ok(await metric(srv.url, 'dstream_http2_refused_connections_total', `reason="${reason}"`) >= 1, reason);
            // Others are served meanwhile.
            assert.equal((await fetch(`${srv.url}/__ursula/health`)).status, 200);
        }
        const grown = (await rss(srv.pid)) - before;
        assert.ok(grown < 64 * 1024 * 1024, `memory grew by ${grown} bytes`);
    } finally {
        await srv.stop();
    }
});

test('a window that never opens and a body that never comes are bounded by --body-timeout', async () => {
    const srv = await startServer({ extraArgs: ['--body-timeout', '2'] });
    try {
        await fetch(`${srv.url}/v1/stream/stall`, { method: 'PUT', headers: { 'content-type': 'text/plain' } });
        await fetch(`${srv.url}/v1/stream/stall`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'y'.repeat(1 << 20) });
        // SETTINGS_INITIAL_WINDOW_SIZE 0: no DATA may be sent, and none is
        // ever allowed.
        const stalled = await rawConnection(srv.port);
        stalled.socket.write(Buffer.concat([
            frame(SETTINGS, 0, 0, Buffer.from([0, 4, 0, 0, 0, 0])),
            frame(HEADERS, END_HEADERS | END_STREAM, 1, requestBlock('/v1/stream/stall?offset=-1')),
        ]));
        // A body announced and never sent: the stream is reset.
        const silent = await rawConnection(srv.port);
        const post = Buffer.concat([Buffer.from([0x83, 0x86]), Buffer.from([0x01, 9]), Buffer.from('127.0.0.1'),
                                    Buffer.from([0x04, '/v1/stream/stall'.length]), Buffer.from('/v1/stream/stall'),
                                    Buffer.from([0x0f, 0x0d, 3]), Buffer.from('100')]);
        silent.socket.write(frame(HEADERS, END_HEADERS, 1, post));

        const started = Date.now();
        await waitClosed(stalled, 8000, 'zero window');
        assert.ok(Date.now() - started >= 1500, 'not before the body timeout');
        assert.equal(goawayCode(stalled), ENHANCE_YOUR_CALM);
        assert.ok(await metric(srv.url, 'dstream_http2_refused_connections_total', 'reason="stall"') >= 1);

        let deadline = Date.now() + 8000;
        while (!silent.frames.some((f) => f.type === RST_STREAM && f.stream === 1)) {
            assert.ok(Date.now() < deadline, 'the stream without its body was reset');
            await sleep(20);
        }
        assert.equal(silent.closed(), false, 'the connection itself stays');
        silent.socket.destroy();
        assert.equal((await fetch(`${srv.url}/__ursula/health`)).status, 200);
        deadline = Date.now();
    } finally {
        await srv.stop();
    }
});

test('an idle HTTP/2 connection gets a GOAWAY after --idle-timeout and is closed', async () => {
    const srv = await startServer({ extraArgs: ['--idle-timeout', '2'] });
    try {
        const conn = await rawConnection(srv.port);
        conn.socket.write(frame(HEADERS, END_HEADERS | END_STREAM, 1, requestBlock('/__ursula/health')));
        const started = Date.now();
        await waitClosed(conn, 8000, 'idle');
        assert.ok(Date.now() - started >= 1500, 'not before the idle timeout');
        assert.equal(goawayCode(conn), 0, 'GOAWAY NO_ERROR');
        assert.ok(conn.frames.some((f) => f.type === HEADERS && f.stream === 1), 'the request was answered');
    } finally {
        await srv.stop();
    }
});

test('a graceful stop sends GOAWAY, answers the streams in flight, ends SSE streams and exits 0', async () => {
    const srv = await startServer({ extraArgs: [] });
    try {
        const session = http2.connect(srv.url);
        await h2request(session, { ':method': 'PUT', ':path': '/v1/stream/drain', 'content-type': 'text/plain' });
        const sse = session.request({ ':method': 'GET', ':path': '/v1/stream/drain?offset=-1&live=sse' });
        // RFC 9113 6.8: a stream begun before the GOAWAY is still answered,
        // a waiting long-poll as at its timeout.
        const poll = h2request(session, { ':method': 'GET',
                                          ':path': '/v1/stream/drain?offset=now&live=long-poll&timeout_ms=60000' });
        let text = '';
        const ended = new Promise((resolve) => { sse.on('end', resolve); sse.on('close', resolve); });
        sse.setEncoding('utf8');
        sse.on('data', (d) => { text += d; });
        const goaway = new Promise((resolve) => session.on('goaway', resolve));
        session.on('error', () => {});
        await sleep(300);
        srv.signal('SIGTERM');
        await goaway;
        await ended;
        assert.match(text, /event: control/);
        const polled = await poll;
        assert.equal(polled.status, 204);
        assert.match(polled.headers['stream-next-offset'] ?? '', /^\d{20}$/);
        const exit = await srv.waitExit(10_000);
        assert.ok(exit, 'the server exited');
        assert.equal(exit.code, 0);
        assert.ok(exit.ms < 5000, `it took ${exit.ms} ms`);
    } finally {
        await srv.stop();
    }
});

