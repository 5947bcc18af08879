// Many live readers of one stream (base protocol 5.7, 5.8; extensions 9.3,
// 9.5): the readers waiting at the tail are handed one read per change,
// made once and rendered once per format, so every reader must still see
// exactly the bytes appended, in order, in its own format, whatever its
// position, its max_bytes or its mode.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { notOnCluster, notOverTls, startServer, suiteOverTls } from './lib/server.mjs';
import { uniq, openSse, sleep, RawConn, rawRequest } from './lib/http.mjs';
import { parsePrometheus, value } from './lib/prometheus.mjs';

// ASan's shadow memory and quarantine are not the server's: the memory
// bound is only checked in a plain build (tests/http/CMakeLists.txt).
const sanitized = process.env.DSTREAM_SANITIZED === '1';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

async function create(url, contentType) {
    const res = await fetch(url, { method: 'PUT', headers: { 'content-type': contentType } });
    assert.equal(res.status, 201, await res.text());
}

async function append(url, contentType, body) {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body });
    assert.equal(res.status, 204, await res.text());
}

// The data of an SSE reader's `data` events until its control event reaches
// `tail`, joined as the reader's format defines; within `ms`.
async function sseData(reader, tail, ms = 10_000) {
    const { events } = await reader.read({
        ms,
        done: (evs) => evs.some((e) => e.event === 'control' && JSON.parse(e.data).streamNextOffset === tail),
    });
    const control = events.filter((e) => e.event === 'control').at(-1);
    assert.equal(JSON.parse(control.data).streamNextOffset, tail, 'the reader reached the tail');
    return events.filter((e) => e.event === 'data').map((e) => e.data);
}

// Follows a stream by long-polls from `offset` until `tail`; returns the bodies.
async function longPollBodies(url, offset, tail) {
    const bodies = [];
    while (offset !== tail) {
        const res = await fetch(`${url}?offset=${offset}&live=long-poll&timeout_ms=10000`);
        assert.ok(res.status === 200 || res.status === 204, `long-poll ${res.status}`);
        if (res.status === 200) bodies.push(Buffer.from(await res.arrayBuffer()));
        offset = res.headers.get('stream-next-offset');
    }
    return bodies;
}

async function tailOf(url) {
    const res = await fetch(url, { method: 'HEAD' });
    return res.headers.get('stream-next-offset');
}

// Opens `count` SSE readers at the tail plus one from the beginning, so that
// appends find some waiting and one catching up.
async function openReaders(url, count, query = '') {
    const readers = [];
    for (let i = 0; i < count; i++) readers.push(await openSse(`${url}?offset=now&live=sse${query}`));
    readers.push(await openSse(`${url}?offset=-1&live=sse${query}`));
    for (const r of readers) assert.equal(r.res.status, 200);
    return readers;
}

test('live fan-out: text readers at the tail, from the start and with a small max_bytes see every byte', async () => {
    const url = `${srv.url}/fan-bkt/${uniq('t')}`;
    await create(url, 'text/plain');
    const readers = await openReaders(url, 12);
    const small = await openSse(`${url}?offset=now&live=sse&max_bytes=5`);
    const messages = Array.from({ length: 30 }, (_, i) => `m${i}-é€😀;`);  // multi-byte characters
    for (const m of messages) await append(url, 'text/plain', m);
    const tail = await tailOf(url);
    const expected = messages.join('');
    for (const r of readers) assert.equal((await sseData(r, tail)).join(''), expected);
    // At most 5 bytes per event, each ending on a whole character.
    const pieces = await sseData(small, tail);
    assert.equal(pieces.join(''), expected);
    assert.ok(pieces.length > messages.length, 'max_bytes split the updates');
});

test('base protocol 10.1 / live fan-out: each control event names its own update\'s offset, and a reader\'s own cursor is always exceeded', async () => {
    const url = `${srv.url}/fan-bkt/${uniq('c')}`;
    await create(url, 'text/plain');
    // More readers than the group hands inline, so that the lanes carry some;
    // half send a cursor far ahead of the clock's, which each of their events
    // must exceed, the other half one that is not a number, which the
    // server ignores as it does no cursor at all.
    const ahead = '900000000000';
    const own = await openReaders(url, 10, `&cursor=${ahead}`);
    const plain = await openReaders(url, 10, '&cursor=not-a-number');
    const messages = Array.from({ length: 12 }, (_, i) => `c${i};`);
    for (const m of messages) await append(url, 'text/plain', m);
    const tail = await tailOf(url);
    const eventsOf = async (r) => (await r.read({
        ms: 10_000,
        done: (evs) => evs.some((e) => e.event === 'control' && JSON.parse(e.data).streamNextOffset === tail),
    })).events;
    const checkOffsets = (events) => {
        // Every control event follows the data it ends: its offset is the
        // bytes of the data events so far (all ASCII) from the reader's start.
        let got = '';
        let start;
        for (const e of events) {
            if (e.event === 'data') got += e.data;
            if (e.event !== 'control') continue;
            const control = JSON.parse(e.data);
            start ??= BigInt(control.streamNextOffset) - BigInt(got.length);
            assert.equal(BigInt(control.streamNextOffset), start + BigInt(got.length));
        }
        return events.filter((e) => e.event === 'control').map((e) => JSON.parse(e.data));
    };
    for (const r of own) {
        for (const control of checkOffsets(await eventsOf(r))) {
            assert.ok(BigInt(control.streamCursor) > BigInt(ahead), `${control.streamCursor} exceeds the client's cursor`);
        }
    }
    const nowInterval = BigInt(Math.floor((Date.now() - Date.UTC(2024, 9, 9)) / 20000));
    for (const r of plain) {
        for (const control of checkOffsets(await eventsOf(r))) {
            const cursor = BigInt(control.streamCursor);
            assert.ok(cursor >= nowInterval - 1n && cursor <= nowInterval, `${control.streamCursor} is the clock's interval`);
        }
    }
    for (const r of [...own, ...plain]) r.controller.abort();
});

test('live fan-out: JSON readers get NDJSON on a bucket and JSON arrays on /v1/stream', async () => {
    for (const [url, asMessages] of [
        [`${srv.url}/fan-bkt/${uniq('j')}`, (data) => data.join('').split('\n').filter(Boolean).map((l) => JSON.parse(l))],
        [`${srv.url}/v1/stream/${uniq('j')}`, (data) => data.flatMap((d) => JSON.parse(d))],
    ]) {
        await create(url, 'application/json');
        const readers = await openReaders(url, 8);
        const sent = Array.from({ length: 20 }, (_, i) => ({ n: i, s: 'x'.repeat(i) }));
        for (const m of sent) await append(url, 'application/json', JSON.stringify(m));
        const tail = await tailOf(url);
        for (const r of readers) assert.deepEqual(asMessages(await sseData(r, tail)), sent, url);
    }
});

test('live fan-out: binary readers get base64 events, and long-polls at the tail get the bytes', async () => {
    const url = `${srv.url}/fan-bkt/${uniq('b')}`;
    await create(url, 'application/octet-stream');
    const readers = await openReaders(url, 8);
    const start = await tailOf(url);
    const polls = Array.from({ length: 4 }, () => ({ bodies: null }));
    const running = polls.map(async (p) => { p.bodies = await longPollBodies(url, start, '00000000000000000320'); });
    const chunks = Array.from({ length: 20 }, (_, i) => Buffer.alloc(16, i * 13 + 1));
    for (const c of chunks) await append(url, 'application/octet-stream', c);
    const tail = await tailOf(url);
    assert.equal(tail, '00000000000000000320');
    const expected = Buffer.concat(chunks);
    for (const r of readers) {
        assert.deepEqual(Buffer.concat((await sseData(r, tail)).map((d) => Buffer.from(d, 'base64'))), expected);
    }
    await Promise.all(running);
    for (const p of polls) assert.deepEqual(Buffer.concat(p.bodies), expected);
});

test('live fan-out: a delete ends every waiting reader with an error event', async () => {
    const url = `${srv.url}/fan-bkt/${uniq('d')}`;
    await create(url, 'text/plain');
    const readers = await openReaders(url, 6);
    await append(url, 'text/plain', 'before');
    assert.equal((await fetch(url, { method: 'DELETE' })).status, 204);
    for (const r of readers) {
        const { events } = await r.read({ ms: 10_000, done: (evs) => evs.some((e) => e.event === 'error') });
        assert.equal(events.filter((e) => e.event === 'data').map((e) => e.data).join(''), 'before');
        const error = events.find((e) => e.event === 'error');
        assert.ok(error, 'an error event');
        const code = JSON.parse(error.data).error.code;
        assert.ok(code === 'STREAM_NOT_FOUND' || code === 'INCARNATION_MISMATCH', error.data);
    }
});

test('live fan-out: deliveries to waiting readers are counted in dstream_live_delivery_seconds, those written without waking the reader in dstream_live_direct_deliveries_total', async () => {
    const scrape = async () => parsePrometheus(await (await fetch(`${srv.url}/__ursula/metrics`)).text());
    const start = await scrape();
    const before = value(start, 'dstream_live_delivery_seconds_count') ?? 0;
    const directBefore = value(start, 'dstream_live_direct_deliveries_total') ?? 0;
    const url = `${srv.url}/fan-bkt/${uniq('m')}`;
    await create(url, 'text/plain');
    const readers = [];
    for (let i = 0; i < 5; i++) readers.push(await openSse(`${url}?offset=now&live=sse`));
    // Time to send their first control events and wait at the tail; one
    // that is late reads for itself and is not counted.
    await sleep(200);
    await append(url, 'text/plain', 'ping');
    for (const r of readers) assert.deepEqual(await sseData(r, '00000000000000000004'), ['ping']);
    const end = await scrape();
    const after = value(end, 'dstream_live_delivery_seconds_count');
    assert.ok(after - before >= 1, `deliveries counted: ${after - before}`);
    // Readers waiting at the tail of plain HTTP/1.1 connections are written
    // to where the change is offered, without being woken; over TLS and
    // HTTP/2 the reader writes through its framing.
    const direct = value(end, 'dstream_live_direct_deliveries_total') - directBefore;
    if (suiteOverTls) {
        assert.equal(direct, 0);
    } else {
        assert.ok(direct >= 1 && direct <= after - before, `direct deliveries: ${direct}`);
    }
});

test('live fan-out: a reader that stops reading falls behind, then still gets every byte in order', async () => {
    const url = `${srv.url}/fan-bkt/${uniq('slow')}`;
    await create(url, 'text/plain');
    const keeping = await openSse(`${url}?offset=now&live=sse`);
    const stalled = await openSse(`${url}?offset=now&live=sse`);  // not read until the end
    await sleep(100);
    // Far more than the socket buffers and the per-reader queue of updates hold.
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const bodies = Array.from({ length: 320 }, (_, i) => letters[i % 26].repeat(64 * 1024 - 1) + String(i % 10));
    for (const b of bodies) await append(url, 'text/plain', b);
    const tail = await tailOf(url);
    const expected = bodies.join('');
    // 20 MiB to each reader, parsed by this process: a bound that holds on a
    // loaded 2-core machine too.
    const [kept, resumed] = await Promise.all([sseData(keeping, tail, 30_000), sseData(stalled, tail, 30_000)]);
    assert.equal(kept.join(''), expected);
    assert.equal(resumed.join('').length, expected.length);
    assert.ok(resumed.join('') === expected, 'the stalled reader saw the same bytes in the same order');
    // It did fall behind: its queue of updates filled and it read for itself.
    const metrics = await (await fetch(`${srv.url}/__ursula/metrics`)).text();
    assert.match(metrics, /^dstream_live_readers_behind_total [1-9]/m);
});

// The HTTP chunks of a chunked body that starts at `from` in `buf`, as long
// as they are complete.
function chunksOf(buf, from) {
    const chunks = [];
    let pos = from;
    while (true) {
        const lineEnd = buf.indexOf('\r\n', pos);
        if (lineEnd < 0) return chunks;
        const size = parseInt(buf.subarray(pos, lineEnd).toString('latin1'), 16);
        if (size === 0 || buf.length < lineEnd + 2 + size + 2) return chunks;
        chunks.push(buf.subarray(lineEnd + 2, lineEnd + 2 + size).toString('utf8'));
        pos = lineEnd + 2 + size + 2;
    }
}

test('live fan-out: the updates queued for a reader whose socket was full go out together, fewer writes than updates', async () => {
    const url = `${srv.url}/fan-bkt/${uniq('coalesced')}`;
    await create(url, 'text/plain');
    const conn = await RawConn.open(srv.port, srv.host);
    await conn.write(rawRequest('GET', `${new URL(url).pathname}?offset=now&live=sse`));
    await conn.waitFor(() => conn.buf.includes('"upToDate":true'));
    conn.socket.pause();
    // About 9 MB: more than the socket buffers hold (so the reader's writes
    // wait and updates queue up), fewer updates than its queue holds.
    const letters = 'abcdefghijklmnopqrstuvwxyz';
    const bodies = Array.from({ length: 60 }, (_, i) => letters[i % 26].repeat(150 * 1024 - 2) + String(i).padStart(2, '0'));
    for (const b of bodies) await append(url, 'text/plain', b);
    const tail = await tailOf(url);
    conn.socket.resume();
    assert.ok(await conn.waitFor(() => conn.buf.includes(`"streamNextOffset":"${tail}"`), 20_000), 'the reader reached the tail');
    const body = conn.buf.indexOf('\r\n\r\n') + 4;
    const chunks = chunksOf(conn.buf, body);
    const data = chunks.join('').split('\n').filter((l) => l.startsWith('data:') && !l.startsWith('data:{'))
        .map((l) => l.slice(5)).join('');
    assert.ok(data === bodies.join(''), 'every byte, in order');
    const written = chunks.filter((c) => c.includes('event: data')).length;
    assert.ok(written < bodies.length, `${written} writes carried the ${bodies.length} updates`);
    conn.destroy();
});

test('live fan-out: 1000 SSE readers waiting at the tail hold bounded memory, and every one gets the next append',
     { timeout: 120_000,
       skip: notOverTls('its bound is a plain connection\'s') || notOnCluster('it measures one process') },
     async (t) => {
    const count = 1000;
    const own = await startServer({ memory: false });
    const conns = [];
    try {
        const path = `/bkt-fanout/${uniq('idle')}`;
        const url = own.url + path;
        await create(url, 'text/plain');
        await append(url, 'text/plain', 'hello');
        // Warm up: the threads' caches and the first connections' memory.
        for (let i = 0; i < 20; i++) await (await fetch(`${url}?offset=-1`)).text();
        const rss = () => Number(/VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${own.pid}/status`, 'latin1'))[1]) * 1024;
        const before = rss();
        for (let i = 0; i < count; i += 100) {
            conns.push(...await Promise.all(Array.from({ length: Math.min(100, count - i) }, async () => {
                const conn = await RawConn.open(own.port);
                await conn.write(`GET ${path}?offset=now&live=sse HTTP/1.1\r\nHost: x\r\n\r\n`);
                // The head and the first control event: the reader waits at the tail.
                await conn.waitFor(() => conn.buf.includes('event: control'), 10_000);
                return conn;
            })));
        }
        await sleep(500);
        const perReader = (rss() - before) / count;
        t.diagnostic(`${count} idle SSE readers: ${Math.round(perReader)} bytes of RSS each`);
        // A reader holds its connection and the frames of its coroutines,
        // not the request's header fields (exchange::keep_request_line_only)
        // nor a queue's first block.
        if (!sanitized) assert.ok(perReader < 12 * 1024, `${perReader} bytes per idle SSE reader`);
        await append(url, 'text/plain', 'world');
        for (const conn of conns) {
            await conn.waitFor(() => conn.buf.includes('data:world'), 10_000);
        }
        assert.equal(conns.filter((c) => !c.buf.includes('data:world')).length, 0, 'every reader got the append');
    } finally {
        for (const c of conns) c.destroy();
        await own.stop();
    }
});
