// Size limits: the request limit and its 413 (extensions 10), Expect:
// 100-continue, and the read response cap and max_bytes (extensions 9.3).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq, snapshot, offsetNum, RawConn, rawRequest } from './lib/http.mjs';

const LIMIT = 33554432;      // 32 MiB request limit
const READ_CAP = 8388608;    // 8 MiB read cap
const MiB = 1 << 20;

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

const OCTET = { 'content-type': 'application/octet-stream' };

async function makeStream(body = 'seed') {
    const url = `${srv.url}/bkt-lim/${uniq('l')}`;
    const res = await fetch(url, { method: 'PUT', headers: OCTET, body });
    assert.equal(res.status, 201, await res.text());
    return url;
}

// Sends only the head of a request announcing `length` body bytes and
// returns the answer that arrives without any body being sent.
async function headOnlyAnswer(method, path, length, extra = {}) {
    const conn = await RawConn.open(srv.port, srv.host);
    try {
        await conn.write(rawRequest(method, path, {
            headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': String(length), ...extra },
        }));
        const res = await conn.readResponse({ ms: 3000 });
        return { res, conn };
    } catch (e) {
        conn.destroy();
        throw e;
    }
}

function checkTooLarge(res) {
    assert.equal(res.status, 413, `expected 413, got ${res.status}: ${res.body.toString()}`);
    assert.equal(res.headers['ursula-max-request-bytes'], String(LIMIT));
    assert.match(res.headers['content-type'] ?? '', /^application\/json/);
    const body = JSON.parse(res.body.toString());
    assert.equal(body.error.code, 'REQUEST_TOO_LARGE');
    assert.equal(typeof body.error.message, 'string');
}

test('ext 10: an append with Content-Length above 33554432 gets 413 REQUEST_TOO_LARGE with Ursula-Max-Request-Bytes before the body is sent',
     async () => {
    const url = new URL(await makeStream());
    const before = await snapshot(url.href);
    const { res, conn } = await headOnlyAnswer('POST', url.pathname, LIMIT + 1);
    conn.destroy();
    checkTooLarge(res);
    assert.deepEqual(await snapshot(url.href), before);
});

test('ext 10: a create with Content-Length above 33554432 gets 413 before the body and creates nothing', async () => {
    const path = `/bkt-lim/${uniq('big')}`;
    const { res, conn } = await headOnlyAnswer('PUT', path, 40 * MiB);
    conn.destroy();
    checkTooLarge(res);
    assert.equal((await fetch(srv.url + path, { method: 'HEAD' })).status, 404);
});

test('ext 10: a request above the limit with Expect: 100-continue gets the 413, not 100 Continue', async () => {
    const url = new URL(await makeStream());
    const { res, conn } = await headOnlyAnswer('POST', url.pathname, LIMIT + 1, { Expect: '100-continue' });
    conn.destroy();
    assert.notEqual(res.status, 100);
    checkTooLarge(res);
});

test('ext 10: an oversized request is refused by a status in the 4xx range before its body (no hang)', async () => {
    // Whatever the code, the server must answer from the head alone and close.
    const url = new URL(await makeStream());
    const before = await snapshot(url.href);
    const { res, conn } = await headOnlyAnswer('POST', url.pathname, LIMIT + 1);
    assert.ok(res.status >= 400 && res.status < 500, `status ${res.status}`);
    assert.ok(await conn.waitClosed(3000), 'the connection closes after the refusal');
    conn.destroy();
    assert.deepEqual(await snapshot(url.href), before);
});

test('ext 10: a body of exactly 33554432 bytes is accepted', async () => {
    const url = await makeStream('');
    const body = Buffer.alloc(LIMIT, 0x61);
    const res = await fetch(url, { method: 'POST', headers: OCTET, body });
    assert.equal(res.status, 204, await res.text());
    assert.equal(offsetNum(res.headers.get('stream-next-offset')), LIMIT);
    // Clean up: 32 MiB per stream adds up in a memory server.
    await fetch(url, { method: 'DELETE' });
});

test('ext 10: a chunked body that crosses the limit is refused (413 or a reset) and nothing is committed', async () => {
    const url = new URL(await makeStream());
    const before = await snapshot(url.href);
    const conn = await RawConn.open(srv.leaderPort, srv.leaderHost);
    let res = null;
    try {
        await conn.write(rawRequest('POST', url.pathname, {
            headers: { 'Content-Type': 'application/octet-stream', 'Transfer-Encoding': 'chunked' },
        }));
        const piece = Buffer.alloc(MiB, 0x62);
        const chunk = Buffer.concat([Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n')]);
        for (let i = 0; i < 33 && !conn.closed && conn.buf.length === 0; i++) {
            try {
                await conn.write(chunk);
            } catch {
                break;
            }
        }
        if (!conn.closed) {
            try { await conn.write('0\r\n\r\n'); } catch { /* reset */ }
        }
        try {
            res = await conn.readResponse({ ms: 3000 });
        } catch {
            res = null; // a reset without an answer is allowed
        }
    } finally {
        conn.destroy();
    }
    if (res) checkTooLarge(res);
    assert.deepEqual(await snapshot(url.href), before);
});

test('RFC 9110 10.1.1: Expect: 100-continue gets "HTTP/1.1 100 Continue" before the body, then the normal answer', async () => {
    const url = new URL(await makeStream(''));
    const conn = await RawConn.open(srv.leaderPort, srv.leaderHost);
    try {
        await conn.write(rawRequest('POST', url.pathname, {
            headers: { 'Content-Type': 'application/octet-stream', 'Content-Length': '5', Expect: '100-continue' },
        }));
        const interim = await conn.readResponse({ ms: 3000 });
        assert.equal(interim.status, 100);
        assert.equal(interim.version, 'HTTP/1.1');
        assert.equal(conn.buf.length, 0, 'nothing after the 100 before the body is sent');
        await conn.write('hello');
        const final = await conn.readResponse();
        assert.equal(final.status, 204);
        assert.equal(offsetNum(final.headers['stream-next-offset']), 5);
        // The connection stays usable.
        await conn.write(rawRequest('GET', `${url.pathname}?offset=-1`));
        const get = await conn.readResponse();
        assert.equal(get.body.toString(), 'hello');
    } finally {
        conn.destroy();
    }
});

test('ext 9.3: read responses are capped at 8 MiB; continuing from Stream-Next-Offset returns every byte', async () => {
    const url = await makeStream('');
    const pieces = [];
    for (let i = 0; i < 10; i++) {
        const piece = Buffer.alloc(MiB);
        for (let j = 0; j < piece.length; j += 4) piece.writeUInt32BE((i << 24) | (j >>> 2), j);
        pieces.push(piece);
        const res = await fetch(url, { method: 'POST', headers: OCTET, body: piece });
        assert.equal(res.status, 204);
    }
    const all = Buffer.concat(pieces);
    let offset = '-1';
    const got = [];
    let responses = 0;
    while (true) {
        const res = await fetch(`${url}?offset=${offset}`);
        assert.equal(res.status, 200);
        const body = Buffer.from(await res.arrayBuffer());
        responses += 1;
        assert.ok(body.length <= READ_CAP, `response of ${body.length} bytes exceeds the cap`);
        got.push(body);
        const next = res.headers.get('stream-next-offset');
        const start = offset === '-1' ? 0 : offsetNum(offset);
        assert.equal(offsetNum(next), start + body.length);
        if (responses === 1) {
            assert.equal(body.length, READ_CAP);
            assert.equal(res.headers.get('stream-up-to-date'), null, 'a partial response is not up to date');
        }
        offset = next;
        if (res.headers.get('stream-up-to-date') === 'true') break;
        assert.ok(responses < 10);
    }
    assert.equal(responses, 2);
    assert.ok(Buffer.concat(got).equals(all), 'the bytes read equal the bytes appended');
    await fetch(url, { method: 'DELETE' });
});

test('ext 9.3: max_bytes asks for fewer bytes; a partial answer has no Stream-Up-To-Date', async () => {
    const url = await makeStream('0123456789');
    const res = await fetch(url + '?offset=-1&max_bytes=4');
    assert.equal(await res.text(), '0123');
    assert.equal(res.headers.get('stream-up-to-date'), null);
    assert.equal(offsetNum(res.headers.get('stream-next-offset')), 4);
    const rest = await fetch(`${url}?offset=${res.headers.get('stream-next-offset')}&max_bytes=100`);
    assert.equal(await rest.text(), '456789');
    assert.equal(rest.headers.get('stream-up-to-date'), 'true');
});

test('ext 9.3: max_bytes above the cap is clamped to 8 MiB; a value that is not a decimal integer is ignored', async () => {
    const url = await makeStream('');
    const body = Buffer.alloc(9 * MiB, 0x63);
    assert.equal((await fetch(url, { method: 'POST', headers: OCTET, body })).status, 204);
    for (const q of ['max_bytes=99999999999', 'max_bytes=18446744073709551616', 'max_bytes=abc',
                     'max_bytes=-5', 'max_bytes=1e9', 'max_bytes=']) {
        const res = await fetch(`${url}?offset=-1&${q}`);
        assert.equal(res.status, 200, q);
        const n = (await res.arrayBuffer()).byteLength;
        assert.equal(n, READ_CAP, `${q}: ${n} bytes`);
        assert.equal(res.headers.get('stream-up-to-date'), null);
    }
    await fetch(url, { method: 'DELETE' });
});

test('ext 9.3: max_bytes=0 on a catch-up read is raised to 1 byte', async () => {
    const url = await makeStream('abc');
    const res = await fetch(url + '?offset=-1&max_bytes=0');
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'a');
    assert.equal(offsetNum(res.headers.get('stream-next-offset')), 1);
});

async function longPollWithMaxBytes(maxBytes) {
    const url = await makeStream('');
    const poll = fetch(`${url}?offset=00000000000000000000&live=long-poll&max_bytes=${maxBytes}&timeout_ms=5000`);
    await new Promise((r) => setTimeout(r, 100));
    await fetch(url, { method: 'POST', headers: OCTET, body: 'abcdef' });
    const res = await poll;
    assert.equal(res.status, 200);
    return { res, text: await res.text() };
}

test('ext 9.3: max_bytes bounds a long-poll answer', async () => {
    const { res, text } = await longPollWithMaxBytes(5);
    assert.equal(text, 'abcde');
    assert.equal(res.headers.get('stream-up-to-date'), null);
    assert.equal(offsetNum(res.headers.get('stream-next-offset')), 5);
});

test('ext 9.3: on a long-poll, max_bytes below 4 is honored (only text SSE raises it to 4)',
     async () => {
    const { text } = await longPollWithMaxBytes(2);
    assert.equal(text, 'ab');
});
