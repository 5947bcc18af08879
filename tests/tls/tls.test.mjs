// TLS on the listeners (base protocol 12.11): HTTPS with a certificate chain,
// TLS 1.2 and 1.3 only with AEAD ciphers, ALPN, session resumption, the
// client commands' --cacert, the admin listener's own pair, a bad pair
// refused at start, and a reload on SIGHUP under load that fails no request
// and drops no connection.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawnSync } from 'node:child_process';
import { X509Certificate } from 'node:crypto';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import https from 'node:https';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import tls from 'node:tls';
import { fileURLToPath } from 'node:url';
import { freePort, serverBinary, startServer } from '../http/lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const certs = mkdtempSync(path.join(os.tmpdir(), 'dstream-tls-'));
execFileSync('bash', [path.join(here, 'make_certs.sh'), certs]);
after(() => rmSync(certs, { recursive: true, force: true }));

const file = (name) => path.join(certs, name);
const ca = readFileSync(file('ca.pem'));
// A leaf's SHA-256 fingerprint, as getPeerCertificate() gives it.
const fingerprint = (name) => new X509Certificate(readFileSync(file(`${name}.leaf.pem`))).fingerprint256;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// The pair a server is started with, in files of its own that a test
// rewrites before a SIGHUP.
function servedPair(name, from = 'a') {
    copyFileSync(file(`${from}.pem`), file(`${name}.pem`));
    copyFileSync(file(`${from}.key`), file(`${name}.key`));
    return ['--tls-cert', file(`${name}.pem`), '--tls-key', file(`${name}.key`)];
}

// A TLS handshake with the server; resolves to the connected socket.
function handshake(port, options = {}) {
    return new Promise((resolve, reject) => {
        const socket = tls.connect({ host: '127.0.0.1', port, ca, ...options });
        // TLS 1.3 tickets may come before secureConnect's listeners run.
        socket.on('session', (session) => { socket.ticket = session; });
        socket.once('secureConnect', () => resolve(socket));
        socket.once('error', reject);
    });
}

// One HTTPS request; resolves to {status, body, cert} (the leaf the answer
// came through), rejects when the exchange fails.
function request(url, { method = 'GET', body, headers = {}, agent = false } = {}) {
    return new Promise((resolve, reject) => {
        const req = https.request(url, { method, headers, agent, ca, timeout: 10_000 }, (res) => {
            const cert = res.socket.getPeerCertificate().fingerprint256;
            const chunks = [];
            res.on('data', (c) => chunks.push(c));
            res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, cert,
                                          body: Buffer.concat(chunks).toString() }));
            res.on('error', reject);
        });
        req.on('timeout', () => req.destroy(new Error('timed out')));
        req.on('error', reject);
        req.end(body);
    });
}

test('HTTPS with a chain: TLS 1.3 and 1.2 with AEAD ciphers, nothing older, ALPN', async () => {
    const srv = await startServer({ extraArgs: servedPair('basic'), ca });
    try {
        assert.match(srv.url, /^https:/);
        const res = await request(`${srv.url}/v1/stream/tls-basic`, {
            method: 'PUT', headers: { 'Content-Type': 'text/plain' },
        });
        assert.equal(res.status, 201);
        assert.equal(res.cert, fingerprint('a'));

        // The chain is sent: the client trusts only the root.
        const t13 = await handshake(srv.port, { ALPNProtocols: ['http/1.1'] });
        assert.equal(t13.getProtocol(), 'TLSv1.3');
        assert.equal(t13.authorized, true);
        assert.equal(t13.alpnProtocol, 'http/1.1');
        t13.destroy();
        const offered = await handshake(srv.port, { ALPNProtocols: ['h2', 'http/1.1'] });
        assert.equal(offered.alpnProtocol, 'h2');
        offered.destroy();

        const t12 = await handshake(srv.port, { maxVersion: 'TLSv1.2' });
        assert.equal(t12.getProtocol(), 'TLSv1.2');
        assert.match(t12.getCipher().name, /GCM|CHACHA20/);
        t12.destroy();

        // A CBC cipher (no AEAD) is refused, as is TLS 1.1.
        await assert.rejects(handshake(srv.port, { maxVersion: 'TLSv1.2', ciphers: 'ECDHE-ECDSA-AES128-SHA' }));
        await assert.rejects(handshake(srv.port, {
            minVersion: 'TLSv1', maxVersion: 'TLSv1.1', ciphers: 'DEFAULT@SECLEVEL=0',
        }));

        // Plain HTTP on the TLS listener gets no HTTP answer.
        const answer = await new Promise((resolve) => {
            let got = '';
            const s = net.connect(srv.port, '127.0.0.1', () => s.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n'));
            s.on('data', (d) => { got += d.toString('latin1'); });
            s.on('close', () => resolve(got));
            s.on('error', () => {});
            s.setTimeout(5000, () => s.destroy());
        });
        assert.doesNotMatch(answer, /^HTTP\//);
    } finally {
        await srv.stop();
    }
});

// The session (ticket) the server gave `socket`.
function ticketOf(socket) {
    if (socket.ticket) return Promise.resolve(socket.ticket);
    return new Promise((resolve) => {
        socket.once('session', resolve);
        socket.resume();  // TLS 1.3 tickets come after the handshake: read them
    });
}

// Resolves to whether a second handshake with the first one's session resumed it.
async function resumes(port, options) {
    const first = await handshake(port, options);
    const session = await ticketOf(first);
    first.destroy();
    const second = await handshake(port, { ...options, session });
    const reused = second.isSessionReused();
    second.destroy();
    return reused;
}

test('sessions resume (TLS 1.3 and 1.2 tickets), across a reload too', async () => {
    const srv = await startServer({ extraArgs: servedPair('resume'), ca });
    try {
        assert.equal(await resumes(srv.port, {}), true, 'TLS 1.3');
        assert.equal(await resumes(srv.port, { maxVersion: 'TLSv1.2' }), true, 'TLS 1.2');

        const first = await handshake(srv.port);
        const session = await ticketOf(first);
        first.destroy();
        servedPair('resume', 'b');
        srv.signal('SIGHUP');
        const deadline = Date.now() + 5000;
        while ((await handshake(srv.port)).getPeerCertificate().fingerprint256 !== fingerprint('b')) {
            assert.ok(Date.now() < deadline, 'the reload took');
            await sleep(50);
        }
        const again = await handshake(srv.port, { session });
        assert.equal(again.isSessionReused(), true, 'a ticket issued before the reload resumes after it');
        again.destroy();
    } finally {
        await srv.stop();
    }
});

test('client commands check the server against --cacert', async () => {
    const srv = await startServer({ extraArgs: servedPair('cli'), ca });
    try {
        const bin = serverBinary();
        const env = { ...process.env };
        delete env.DSTREAM_CACERT;
        const run = (...args) => spawnSync(bin, args, { env, input: 'hello tls', encoding: 'utf8', timeout: 20_000 });
        const url = `${srv.url}/v1/stream/tls-cli`;
        const created = run('create', url, '--content-type', 'text/plain', '--cacert', file('ca.pem'));
        assert.equal(created.status, 0, created.stderr);
        const appended = run('append', url, '--cacert', file('ca.pem'));
        assert.equal(appended.status, 0, appended.stderr);
        const read = run('read', url, '--cacert', file('ca.pem'));
        assert.equal(read.status, 0, read.stderr);
        assert.equal(read.stdout, 'hello tls');
        // The system's roots do not know the test root: no answer (exit 3).
        const refused = run('read', url);
        assert.equal(refused.status, 3, refused.stderr);
        // DSTREAM_CACERT stands for the flag.
        const viaEnv = spawnSync(bin, ['read', url], {
            env: { ...env, DSTREAM_CACERT: file('ca.pem') }, encoding: 'utf8', timeout: 20_000,
        });
        assert.equal(viaEnv.status, 0, viaEnv.stderr);
    } finally {
        await srv.stop();
    }
});

test('the admin listener takes a pair of its own', async () => {
    const adminPort = await freePort();
    const srv = await startServer({
        extraArgs: ['--admin-listen', `127.0.0.1:${adminPort}`,
                    '--admin-tls-cert', file('b.pem'), '--admin-tls-key', file('b.key')],
    });
    try {
        // The client listener stays plain HTTP.
        assert.match(srv.url, /^http:/);
        assert.equal((await fetch(`${srv.url}/__ursula/health`)).status, 200);
        const res = await request(`https://127.0.0.1:${adminPort}/__ursula/admin/node`);
        assert.equal(res.cert, fingerprint('b'));
        assert.equal(res.status, 200, res.body);
    } finally {
        await srv.stop();
    }
});

test('a pair that does not load stops the start, naming the file', () => {
    const bin = serverBinary();
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dstream-tls-bad-'));
    try {
        const start = (cert, key) => spawnSync(bin, [
            'serve', '--memory', '--listen', '127.0.0.1:0', '--admin-listen', 'off', '--data-dir', dir,
            '--tls-cert', cert, '--tls-key', key,
        ], { encoding: 'utf8', timeout: 20_000 });
        const mismatched = start(file('a.pem'), file('other.key'));
        assert.notEqual(mismatched.status, 0);
        assert.match(mismatched.stdout + mismatched.stderr, /does not match/);
        const missing = start(file('nothing.pem'), file('a.key'));
        assert.notEqual(missing.status, 0);
        assert.match(missing.stdout + missing.stderr, /nothing\.pem/);
        const alone = spawnSync(bin, ['serve', '--memory', '--tls-cert', file('a.pem')], { encoding: 'utf8' });
        assert.equal(alone.status, 2);
        assert.match(alone.stderr, /go together/);
    } finally {
        rmSync(dir, { recursive: true, force: true });
    }
});

test('SIGHUP reloads the pair under load: no failed request, open connections kept', async () => {
    const srv = await startServer({ extraArgs: servedPair('live'), ca });
    const failures = [];
    const acknowledged = [];
    let running = true;
    let requests = 0;
    // Requests that went through a connection made before the reload (its
    // certificate is the old one), after the reload took.
    let oldConnectionAfterReload = 0;
    let reloaded = false;
    const stream = `${srv.url}/v1/stream/tls-reload`;
    const keepAlive = new https.Agent({ keepAlive: true, maxSockets: 4, ca });
    try {
        assert.equal((await request(stream, { method: 'PUT', headers: { 'Content-Type': 'text/plain' } })).status, 201);
        // A live reader that must see appends made after the reload on its
        // connection of before.
        const live = await new Promise((resolve, reject) => {
            const req = https.get(`${stream}?offset=-1&live=sse`, { ca, agent: false }, (res) => {
                let text = '';
                res.setEncoding('utf8');
                res.on('data', (d) => { text += d; });
                resolve({ req, text: () => text, cert: res.socket.getPeerCertificate().fingerprint256 });
            });
            req.on('error', reject);
        });
        assert.equal(live.cert, fingerprint('a'));

        const worker = async (id, agent) => {
            for (let n = 0; running; n++) {
                const body = `w${id}-${n};`;
                try {
                    const res = await request(stream, {
                        method: 'POST', body, agent, headers: { 'Content-Type': 'text/plain' },
                    });
                    requests++;
                    if (res.status !== 204 && res.status !== 200) {
                        failures.push(`append ${body}: ${res.status} ${res.body}`);
                    } else {
                        acknowledged.push(body);
                    }
                    if (reloaded && res.cert === fingerprint('a')) oldConnectionAfterReload++;
                    const read = await request(`${stream}?offset=-1`, { agent });
                    requests++;
                    if (read.status !== 200) failures.push(`read: ${read.status}`);
                } catch (e) {
                    failures.push(`${body}: ${e.message}`);
                }
            }
        };
        // Keep-alive workers (connections made before the reload, used after
        // it) and workers that make a new connection, a handshake, per request.
        const workers = [0, 1, 2, 3].map((i) => worker(i, keepAlive))
            .concat([4, 5].map((i) => worker(i, false)));

        await sleep(700);
        servedPair('live', 'b');
        srv.signal('SIGHUP');
        let deadline = Date.now() + 5000;
        while ((await request(`${srv.url}/__ursula/health`)).cert !== fingerprint('b')) {
            assert.ok(Date.now() < deadline, 'the new pair serves new connections within 5 s');
            await sleep(20);
        }
        reloaded = true;
        await sleep(700);

        // A key that does not match: refused, the pair of before stays.
        copyFileSync(file('other.key'), file('live.key'));
        srv.signal('SIGHUP');
        deadline = Date.now() + 5000;
        while (!/reload refused.*does not match/.test(srv.log())) {
            assert.ok(Date.now() < deadline, `a refusal in the log:\n${srv.log()}`);
            await sleep(20);
        }
        assert.equal((await request(`${srv.url}/__ursula/health`)).cert, fingerprint('b'));
        // A certificate file cut short: refused too.
        writeFileSync(file('live.pem'), readFileSync(file('b.pem')).subarray(0, 200));
        srv.signal('SIGHUP');
        deadline = Date.now() + 5000;
        while ((srv.log().match(/reload refused/g) ?? []).length < 2) {
            assert.ok(Date.now() < deadline, `a second refusal in the log:\n${srv.log()}`);
            await sleep(20);
        }
        await sleep(500);
        assert.equal((await request(`${srv.url}/__ursula/health`)).cert, fingerprint('b'));

        running = false;
        await Promise.all(workers);
        assert.deepEqual(failures, []);
        assert.ok(requests > 100, `requests under load: ${requests}`);
        assert.ok(oldConnectionAfterReload > 0, 'keep-alive connections of before the reload kept serving');

        // The live reader's connection of before the reload gets a new append.
        assert.equal((await request(stream, { method: 'POST', body: 'after-reload', headers: { 'Content-Type': 'text/plain' } })).status, 204);
        deadline = Date.now() + 5000;
        while (!live.text().includes('after-reload')) {
            assert.ok(Date.now() < deadline, 'the SSE reader of before the reload got the append');
            await sleep(20);
        }
        live.req.destroy();

        // Every acknowledged append is in the stream, once.
        const whole = (await request(`${stream}?offset=-1`)).body;
        for (const body of acknowledged) assert.equal(whole.split(body).length, 2, body);

        const metrics = (await request(`${srv.url}/__ursula/metrics`)).body;
        assert.match(metrics, /dstream_tls_reloads_total\{result="ok"\} 1\n/);
        assert.match(metrics, /dstream_tls_reloads_total\{result="failed"\} 2\n/);
        assert.match(metrics, /dstream_http_protocol_requests_total\{version="1.1",tls="true"\} [1-9]/);
    } finally {
        running = false;
        keepAlive.destroy();
        await srv.stop();
    }
});

// Pipelined GETs on one TLS connection, `count` of them, read only after
// `pauseMs`; resolves to the bodies of the answers, in order.
function pipelinedReads(port, path, count, pauseMs) {
    return new Promise((resolve, reject) => {
        const socket = tls.connect({ host: '127.0.0.1', port, ca, ALPNProtocols: ['http/1.1'] });
        let got = Buffer.alloc(0);
        const bodies = [];
        socket.once('secureConnect', () => {
            socket.pause();
            socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`.repeat(count));
            setTimeout(() => socket.resume(), pauseMs);
        });
        socket.on('data', (d) => {
            got = Buffer.concat([got, d]);
            for (;;) {
                const end = got.indexOf('\r\n\r\n');
                if (end < 0) return;
                const head = got.subarray(0, end).toString('latin1');
                const length = Number(/content-length: (\d+)/i.exec(head)?.[1]);
                if (got.length < end + 4 + length) return;
                bodies.push(got.subarray(end + 4, end + 4 + length));
                got = got.subarray(end + 4 + length);
                if (bodies.length === count) {
                    socket.destroy();
                    resolve(bodies);
                    return;
                }
            }
        });
        socket.on('error', reject);
        socket.setTimeout(30_000, () => socket.destroy(new Error(`timed out after ${bodies.length} answers`)));
    });
}

test('answers a paused reader cannot take at once arrive whole and in order', async () => {
    // Each answer is written at once (under 64 KiB); 80 of them fill the
    // socket while the client does not read, so the records the socket does
    // not take are held and sent as it drains.
    const srv = await startServer({ extraArgs: servedPair('paused'), ca });
    try {
        const content = Buffer.alloc(60_000);
        for (let i = 0; i < content.length; i++) content[i] = 97 + ((i * 7 + (i >> 9)) % 26);
        const stream = '/v1/stream/tls-paused';
        assert.equal((await request(`${srv.url}${stream}`, {
            method: 'PUT', body: content, headers: { 'Content-Type': 'application/octet-stream' },
        })).status, 201);
        const bodies = await pipelinedReads(srv.port, `${stream}?offset=-1`, 80, 500);
        bodies.forEach((body, i) => assert.ok(body.equals(content), `answer ${i} differs`));
        // The connection still serves a request after.
        assert.equal((await request(`${srv.url}${stream}?offset=-1`)).body, content.toString());
    } finally {
        await srv.stop();
    }
});
