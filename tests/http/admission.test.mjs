// Admission control: request bodies in memory and live readers are bounded
// per node (and live readers per stream); a request past a bound gets 503
// with Retry-After and its code, decided before the body is read, and the
// server goes on serving everything else.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import https from 'node:https';
import { startServer } from './lib/server.mjs';
import { uniq, expectError, RawConn, rawRequest, sleep } from './lib/http.mjs';

const MiB = 1024 * 1024;
let srv;
before(async () => {
    srv = await startServer({
        extraArgs: ['--ingress-body-bytes', String(32 * MiB), '--max-live-reads', '5',
                    '--max-live-reads-per-stream', '3'],
    });
});
after(async () => { await srv?.stop(); });

const TEXT = { 'content-type': 'text/plain' };

async function createStream(name, server = srv) {
    const url = `${server.url}/bkt-adm/${uniq(name)}`;
    const res = await fetch(url, { method: 'PUT', headers: TEXT, body: 'seed' });
    assert.equal(res.status, 201);
    return url;
}

// Opens an SSE reader from the tail and waits for its first event.
async function openLive(url) {
    const controller = new AbortController();
    const res = await fetch(`${url}?offset=now&live=sse`, { signal: controller.signal });
    if (res.status !== 200) return { res, close: () => controller.abort() };
    const reader = res.body.getReader();
    await reader.read();
    return { res, close: () => controller.abort() };
}

test('admission: live readers past the per-stream bound answer 503 LIVE_READ_BACKPRESSURE with Retry-After; other streams still read live', async () => {
    const a = await createStream('live-a');
    const b = await createStream('live-b');
    const open = [];
    for (let i = 0; i < 3; i++) {
        const r = await openLive(a);
        assert.equal(r.res.status, 200, `reader ${i}`);
        open.push(r);
    }
    const refused = await fetch(`${a}?offset=now&live=sse`);
    assert.equal(refused.headers.get('retry-after'), '1');
    await expectError(refused, 503, 'LIVE_READ_BACKPRESSURE');
    // A long-poll that would wait counts too.
    await expectError(await fetch(`${a}?offset=now&live=long-poll`), 503, 'LIVE_READ_BACKPRESSURE');
    // A catch-up read is no live read: it is served.
    const catchUp = await fetch(`${a}?offset=-1`);
    assert.equal(catchUp.status, 200);
    assert.equal(await catchUp.text(), 'seed');
    const other = await openLive(b);
    assert.equal(other.res.status, 200, 'another stream has its own bound');
    open.push(other);
    // Readers that leave give their places back (the server notices at its next write).
    for (const r of open) r.close();
    await fetch(a, { method: 'POST', headers: TEXT, body: 'x' });
    await fetch(b, { method: 'POST', headers: TEXT, body: 'x' });
    const deadline = Date.now() + 5000;
    let again;
    while (true) {
        again = await openLive(a);
        if (again.res.status === 200) break;
        await again.res.text();
        assert.ok(Date.now() < deadline, 'the places of readers that left were not given back');
        await fetch(a, { method: 'POST', headers: TEXT, body: 'y' });
        await sleep(50);
    }
    again.close();
});

test('admission: live readers past the node bound answer 503 on any stream', async () => {
    // A server of its own: the readers of the other tests hold no places here.
    const own = await startServer({ extraArgs: ['--max-live-reads', '5'] });
    try {
        const open = [];
        for (let i = 0; i < 5; i++) {
            const r = await openLive(await createStream(`node-${i}`, own));
            assert.equal(r.res.status, 200, `reader ${i}`);
            open.push(r);
        }
        const url = await createStream('node-extra', own);
        await expectError(await fetch(`${url}?offset=now&live=sse`), 503, 'LIVE_READ_BACKPRESSURE');
        // Writes are never refused for readers.
        const w = await fetch(url, { method: 'POST', headers: TEXT, body: 'still writable' });
        assert.equal(w.status, 204);
        for (const r of open) r.close();
    } finally {
        await own.stop();
    }
});

test('admission: request bodies past the node budget answer 503 INGRESS_BODY_BYTES_LIMIT_REACHED before the body; the held request completes', async () => {
    const url = await createStream('bodies');
    const path = new URL(url).pathname;
    // A 20 MiB append whose body arrives slowly holds its share.
    const slow = await RawConn.open(srv.port);
    await slow.write(rawRequest('POST', path, { headers: { ...TEXT, 'content-length': String(20 * MiB) } }));
    await slow.write(Buffer.alloc(MiB, 0x61));
    await sleep(100);
    // Another 20 MiB body does not fit beside it: refused from its head.
    const second = await RawConn.open(srv.port);
    await second.write(rawRequest('POST', path, { headers: { ...TEXT, 'content-length': String(20 * MiB) } }));
    const refused = await second.readResponse();
    assert.equal(refused.status, 503);
    assert.equal(refused.headers['retry-after'], '1');
    assert.equal(JSON.parse(refused.body.toString()).error.code, 'INGRESS_BODY_BYTES_LIMIT_REACHED');
    assert.ok(await second.waitClosed(), 'the refused connection closes (its body was never read)');
    // Small writes fit beside it.
    assert.equal((await fetch(url, { method: 'POST', headers: TEXT, body: 'small' })).status, 204);
    // The held request finishes, and its share is free again.
    await slow.write(Buffer.alloc(19 * MiB, 0x61));
    const done = await slow.readResponse({ ms: 20000 });
    assert.equal(done.status, 204);
    slow.destroy();
    const third = await fetch(url, { method: 'POST', headers: TEXT, body: Buffer.alloc(20 * MiB, 0x62) });
    assert.equal(third.status, 204);
});

// GET `url` from the local address `from` (127.0.0.0/8 is all loopback), as
// another client host would; resolves with the status, body length and time.
function getFrom(url, from) {
    return new Promise((resolve, reject) => {
        const started = Date.now();
        const req = (url.startsWith('https:') ? https : http).get(url, { localAddress: from }, (res) => {
            let bytes = 0;
            res.on('data', (c) => { bytes += c.length; });
            res.on('end', () => resolve({ status: res.statusCode, bytes, ms: Date.now() - started }));
            res.on('error', reject);
        });
        req.on('error', reject);
    });
}

test('admission: a client address past its read quota is slowed to it, and other clients are not', async () => {
    const quota = await startServer({ extraArgs: ['--client-read-bytes-per-second', String(MiB)] });
    try {
        const url = `${quota.url}/bkt-adm/${uniq('q')}`;
        const body = Buffer.alloc(3 * MiB, 'q');
        assert.equal((await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body })).status, 201);
        // One second's worth goes at once; the other 2 MiB wait for the quota.
        const slowed = await getFrom(`${url}?offset=-1`, '127.0.0.1');
        assert.equal(slowed.status, 200);
        assert.equal(slowed.bytes, 3 * MiB);
        assert.ok(slowed.ms >= 1500, `3 MiB at 1 MiB/s took ${slowed.ms} ms`);
        // Another address has its own quota.
        const other = await getFrom(`${url}?offset=-1&max_bytes=${MiB}`, '127.0.0.2');
        assert.equal(other.status, 200);
        assert.equal(other.bytes, MiB);
        assert.ok(other.ms < 1000, `a fresh client waited ${other.ms} ms`);
        const metrics = await (await fetch(`${quota.url}/__ursula/metrics`)).text();
        assert.match(metrics, /^dstream_read_quota_delays_total [1-9]/m);
        assert.match(metrics, /^dstream_read_quota_delay_seconds_total (1\.[5-9]|[2-9])/m);
    } finally {
        await quota.stop();
    }
});
