// Error bodies (extensions 11) and refusals that commit nothing (11.1),
// with the typed headers of the base protocol (5.2) beside them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq, expectError, snapshot, offsetNum, RawConn, rawRequest } from './lib/http.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

const OCTET = { 'content-type': 'application/octet-stream' };

async function makeStream(body = 'seed', headers = OCTET, bucket = 'bkt-err') {
    const url = `${srv.url}/${bucket}/${uniq('e')}`;
    const res = await fetch(url, { method: 'PUT', headers, body });
    assert.equal(res.status, 201, await res.text());
    return url;
}

// Sends `init` to `url`, checks the error answer, and that the stream is unchanged.
async function refused(url, init, status, code) {
    const before = await snapshot(url);
    const res = await fetch(url + (init.query ?? ''), init);
    const body = await expectError(res, status, code, { head: init.method === 'HEAD' });
    assert.deepEqual(await snapshot(url), before, `${code}: the refused request changed the stream`);
    return { res, body };
}

test('ext 11: 404 STREAM_NOT_FOUND for GET, POST, DELETE on a missing stream, with the error body', async () => {
    const url = `${srv.url}/bkt-err/${uniq('missing')}`;
    await expectError(await fetch(url + '?offset=-1'), 404, 'STREAM_NOT_FOUND');
    await expectError(await fetch(url, { method: 'POST', headers: OCTET, body: 'x' }), 404, 'STREAM_NOT_FOUND');
    await expectError(await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } }), 404, 'STREAM_NOT_FOUND');
    await expectError(await fetch(url, { method: 'DELETE' }), 404, 'STREAM_NOT_FOUND');
    await expectError(await fetch(url + '?offset=-1&live=long-poll'), 404, 'STREAM_NOT_FOUND');
    await expectError(await fetch(url + '?offset=-1&live=sse'), 404, 'STREAM_NOT_FOUND');
    await expectError(await fetch(`${srv.url}/v1/stream/${uniq('missing')}`), 404, 'STREAM_NOT_FOUND');
    // The refused append created nothing.
    assert.equal((await fetch(url, { method: 'HEAD' })).status, 404);
});

test('ext 11: HEAD errors carry Content-Type application/json and no body (raw socket)', async () => {
    const url = new URL(await makeStream());
    const conn = await RawConn.open(srv.leaderPort, srv.leaderHost);
    try {
        // A HEAD 404, a HEAD 400 and a GET after them on one connection: if a
        // HEAD answer carried body bytes, the next status line would not follow.
        await conn.write(Buffer.concat([
            rawRequest('HEAD', `/bkt-err/${uniq('missing')}`),
            rawRequest('HEAD', url.pathname, { headers: { 'Stream-Incarnation': 'bogus' } }),
            rawRequest('GET', `${url.pathname}?offset=-1`),
        ]));
        const h404 = await conn.readResponse({ noBody: true });
        assert.equal(h404.status, 404);
        assert.match(h404.headers['content-type'], /^application\/json/);
        const h400 = await conn.readResponse({ noBody: true });
        assert.equal(h400.status, 400);
        assert.match(h400.headers['content-type'], /^application\/json/);
        const get = await conn.readResponse();
        assert.equal(get.status, 200, `the bytes after the HEAD answers: ${get.rawHeaders}`);
        assert.equal(get.body.toString(), 'seed');
    } finally {
        conn.destroy();
    }
    const viaFetch = await fetch(`${srv.url}/bkt-err/${uniq('missing')}`, { method: 'HEAD' });
    await expectError(viaFetch, 404, 'STREAM_NOT_FOUND', { head: true });
});

test('base 5.2 / ext 11: 409 CONTENT_TYPE_MISMATCH for an append of another content type, nothing committed', async () => {
    const url = await makeStream();
    await refused(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' }, 409, 'CONTENT_TYPE_MISMATCH');
    const json = await makeStream('{"a":1}', { 'content-type': 'application/json' });
    await refused(json, { method: 'POST', headers: OCTET, body: '{"b":2}' }, 409, 'CONTENT_TYPE_MISMATCH');
});

test('base 5.2 / ext 5.8: 409 STREAM_SEQ_CONFLICT with Stream-Last-Seq for a Stream-Seq regression, nothing committed', async () => {
    const url = await makeStream();
    const ok = await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': '0005' }, body: 'a' });
    assert.equal(ok.status, 204);
    for (const seq of ['0005', '0004', '00050']) {
        // '00050' > '0005' lexicographically: only the first two refuse.
        if (seq === '00050') break;
        const { res } = await refused(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': seq }, body: 'b' },
                                      409, 'STREAM_SEQ_CONFLICT');
        assert.equal(res.headers.get('stream-last-seq'), '0005');
    }
    const next = await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': '0006' }, body: 'c' });
    assert.equal(next.status, 204);
});

test('base 5.2: 409 STREAM_CLOSED with Stream-Closed: true and Stream-Next-Offset for an append to a closed stream', async () => {
    const url = await makeStream('final');
    const close = await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } });
    assert.equal(close.status, 204);
    const tail = close.headers.get('stream-next-offset');
    for (const headers of [OCTET, { ...OCTET, 'stream-closed': 'true' }, { 'content-type': 'text/plain' }]) {
        const { res } = await refused(url, { method: 'POST', headers, body: 'more' }, 409, 'STREAM_CLOSED');
        assert.equal(res.headers.get('stream-closed'), 'true');
        assert.equal(res.headers.get('stream-next-offset'), tail);
    }
    // A close-only repeat is idempotent.
    const again = await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } });
    assert.equal(again.status, 204);
    assert.equal(again.headers.get('stream-closed'), 'true');
});

test('base 5.2: 400 EMPTY_APPEND for an empty POST without Stream-Closed, nothing committed', async () => {
    const url = await makeStream();
    await refused(url, { method: 'POST', headers: OCTET, body: '' }, 400, 'EMPTY_APPEND');
    await refused(url, { method: 'POST', headers: { ...OCTET, 'stream-closed': 'false' }, body: '' }, 400, 'EMPTY_APPEND');
    assert.equal((await fetch(url, { method: 'HEAD' })).headers.get('stream-closed'), null);
});

test('base 5.2: 400 MISSING_CONTENT_TYPE for an append with a body and no Content-Type, nothing committed', async () => {
    const url = await makeStream();
    // A Uint8Array body makes fetch send no Content-Type.
    await refused(url, { method: 'POST', body: new Uint8Array([1, 2, 3]) }, 400, 'MISSING_CONTENT_TYPE');
});

test('base 5.6 / ext 11: 400 INVALID_OFFSET for a malformed offset', async () => {
    const url = await makeStream();
    for (const offset of ['abc', '123', '-2', '0000000000000000000x', '000000000000000000001', '', '%20-1']) {
        await refused(url, { query: `?offset=${offset}` }, 400, 'INVALID_OFFSET');
    }
});

test('ext 11: 416 OFFSET_OUT_OF_RANGE for an offset beyond the tail', async () => {
    const url = await makeStream('abc');
    const { res } = await refused(url, { query: '?offset=00000000000000000099' }, 416, 'OFFSET_OUT_OF_RANGE');
    assert.ok(res.headers.get('stream-incarnation'), 'ext 2.4: a 416 of a read names the incarnation');
});

test('ext 11: 400 INVALID_QUERY for a repeated offset and other bad read parameters', async () => {
    const url = await makeStream();
    for (const query of ['?offset=-1&offset=-1', '?offset=-1&offset=now', '?offset=-1&live=bogus',
                         '?live=long-poll', '?live=sse', '?offset=-1&live=sse&live=sse',
                         '?offset=-1&max_bytes=1&max_bytes=2', '?offset=-1&cursor=a&cursor=b', '?offset=-1&x=%zz']) {
        await refused(url, { query }, 400, 'INVALID_QUERY');
    }
});

test('base 5.1 / ext 11: 400 INVALID_HEADER for a bad Stream-TTL or Stream-Expires-At, nothing created', async () => {
    for (const headers of [{ 'stream-ttl': '03600' }, { 'stream-ttl': '+3600' }, { 'stream-ttl': '3600.0' },
                           { 'stream-ttl': '3.6e3' }, { 'stream-ttl': '-1' }, { 'stream-ttl': 'abc' },
                           { 'stream-ttl': '' },
                           { 'stream-expires-at': 'tomorrow' },
                           { 'stream-ttl': '60', 'stream-expires-at': '2099-01-01T00:00:00Z' }]) {
        const url = `${srv.url}/bkt-err/${uniq('ttl')}`;
        const res = await fetch(url, { method: 'PUT', headers });
        await expectError(res, 400, 'INVALID_HEADER');
        assert.equal((await fetch(url, { method: 'HEAD' })).status, 404, `${JSON.stringify(headers)} created the stream`);
    }
});

test('base 5.2.1 / ext 11: 400 INVALID_PRODUCER for partial or malformed producer headers, nothing committed', async () => {
    const url = await makeStream();
    const cases = [
        { 'producer-id': 'p1' },
        { 'producer-id': 'p1', 'producer-epoch': '0' },
        { 'producer-epoch': '0', 'producer-seq': '0' },
        { 'producer-id': 'p1', 'producer-epoch': '-1', 'producer-seq': '0' },
        { 'producer-id': 'p1', 'producer-epoch': '0', 'producer-seq': 'x' },
        { 'producer-id': 'p1', 'producer-epoch': '01', 'producer-seq': '0' },
        { 'producer-id': 'p1', 'producer-epoch': '9007199254740992', 'producer-seq': '0' },
        { 'producer-id': '', 'producer-epoch': '0', 'producer-seq': '0' },
    ];
    for (const h of cases) {
        await refused(url, { method: 'POST', headers: { ...OCTET, ...h }, body: 'x' }, 400, 'INVALID_PRODUCER');
    }
    // Producer headers on a create are refused too, and create nothing.
    const fresh = `${srv.url}/bkt-err/${uniq('prod')}`;
    const res = await fetch(fresh, { method: 'PUT', headers: { 'producer-id': 'p', 'producer-epoch': '0', 'producer-seq': '0' } });
    await expectError(res, 400, 'INVALID_PRODUCER');
    assert.equal((await fetch(fresh, { method: 'HEAD' })).status, 404);
});

test('base 5.1 / ext 11: 409 STREAM_ALREADY_EXISTS_CONFLICT for a create with another configuration', async () => {
    const url = await makeStream();
    await refused(url, { method: 'PUT', headers: { 'content-type': 'text/plain' } }, 409, 'STREAM_ALREADY_EXISTS_CONFLICT');
    await refused(url, { method: 'PUT', headers: { ...OCTET, 'stream-ttl': '60' } }, 409, 'STREAM_ALREADY_EXISTS_CONFLICT');
    await refused(url, { method: 'PUT', headers: { ...OCTET, 'stream-closed': 'true' } }, 409, 'STREAM_ALREADY_EXISTS_CONFLICT');
    // The matching configuration is an idempotent 200 that appends nothing.
    const before = await snapshot(url);
    const same = await fetch(url, { method: 'PUT', headers: OCTET, body: 'ignored?' });
    assert.equal(same.status, 200);
    assert.deepEqual(await snapshot(url), before);
});

test('ext 2.4 / 11: Stream-Incarnation precondition: 412 INCARNATION_MISMATCH and 400 INVALID_HEADER when malformed', async () => {
    const url = await makeStream();
    const inc = (await fetch(url, { method: 'HEAD' })).headers.get('stream-incarnation');
    assert.match(inc, /^\d{16}$/);
    const other = String(BigInt(inc) === 4503599627370496n ? 4503599627370497n : 4503599627370496n);
    const { res } = await refused(url, { method: 'POST', headers: { ...OCTET, 'stream-incarnation': other }, body: 'x' },
                                  412, 'INCARNATION_MISMATCH');
    assert.equal(res.headers.get('stream-incarnation'), inc);
    await refused(url, { headers: { 'stream-incarnation': other }, query: '?offset=-1' }, 412, 'INCARNATION_MISMATCH');
    await refused(url, { method: 'DELETE', headers: { 'stream-incarnation': other } }, 412, 'INCARNATION_MISMATCH');
    for (const bad of ['abc', '1', '9007199254740992', '04503599627370496']) {
        await refused(url, { method: 'POST', headers: { ...OCTET, 'stream-incarnation': bad }, body: 'x' }, 400, 'INVALID_HEADER');
    }
    // A PUT with the header for a missing stream answers 412 and creates nothing.
    const fresh = `${srv.url}/bkt-err/${uniq('inc')}`;
    await expectError(await fetch(fresh, { method: 'PUT', headers: { 'stream-incarnation': other } }), 412, 'INCARNATION_MISMATCH');
    assert.equal((await fetch(fresh, { method: 'HEAD' })).status, 404);
    // The matching token works.
    const ok = await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-incarnation': inc }, body: 'x' });
    assert.equal(ok.status, 204);
});

test('ext 11: a header that may appear once is refused when repeated (400 INVALID_HEADER, raw socket)', async () => {
    const url = new URL(await makeStream());
    const before = await snapshot(url.href);
    const conn = await RawConn.open(srv.leaderPort, srv.leaderHost);
    try {
        const req = Buffer.from(
            `POST ${url.pathname} HTTP/1.1\r\nHost: x\r\nContent-Type: application/octet-stream\r\n` +
            'Stream-Seq: 1\r\nStream-Seq: 2\r\nContent-Length: 1\r\n\r\nz', 'latin1');
        await conn.write(req);
        const res = await conn.readResponse();
        assert.equal(res.status, 400);
        assert.match(res.headers['content-type'], /^application\/json/);
        assert.equal(JSON.parse(res.body.toString()).error.code, 'INVALID_HEADER');
    } finally {
        conn.destroy();
    }
    assert.deepEqual(await snapshot(url.href), before);
});

test('ext 11: 405 METHOD_NOT_ALLOWED with an error body for an unsupported method on a stream', async () => {
    const url = await makeStream();
    await refused(url, { method: 'PATCH', headers: OCTET, body: 'x' }, 405, 'METHOD_NOT_ALLOWED');
});

test('ext 11: the message never echoes the request body or a credential', async () => {
    const url = await makeStream('{"a":1}', { 'content-type': 'application/json' });
    const secret = 'SECRET-3f9a1c';
    const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', authorization: `Bearer ${secret}` },
        body: `{"token":"${secret}",}`,
    });
    const body = await expectError(res, 400, 'INVALID_REQUEST');
    assert.ok(!body.error.message.includes(secret), body.error.message);
    const seq = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain', authorization: secret }, body: secret });
    const b2 = await expectError(seq, 409, 'CONTENT_TYPE_MISMATCH');
    assert.ok(!b2.error.message.includes(secret));
});

test('ext 11: every 4xx on a route has the error shape (table of refusals)', async () => {
    const url = await makeStream();
    const cases = [
        [`${srv.url}/abc/x`, { method: 'PUT' }, 400, 'INVALID_BUCKET_ID'],
        [`${srv.url}/bkt-err/$x`, { method: 'PUT' }, 400, 'INVALID_STREAM_ID'],
        [`${srv.url}/bkt-err/${uniq()}/sub/x`, {}, 404, 'NOT_FOUND'],
        [`${url}?offset=zzz`, {}, 400, 'INVALID_OFFSET'],
        [`${url}?offset=-1&consistency=bogus`, {}, 400, 'INVALID_QUERY'],
        [url, { method: 'POST', headers: OCTET, body: '' }, 400, 'EMPTY_APPEND'],
        [url, { method: 'PUT', headers: { 'stream-ttl': 'x' } }, 400, 'INVALID_HEADER'],
    ];
    for (const [target, init, status, code] of cases) {
        const res = await fetch(target, init);
        await expectError(res, status, code);
        assert.equal(res.headers.get('ursula-protocol'), '2');
        assert.equal(res.headers.get('cache-control'), 'no-store');
    }
});

test('base 5.2 / ext 11.1: a refused append in a sequence leaves the tail where the last success put it', async () => {
    const url = await makeStream('');
    let tail = offsetNum((await fetch(url, { method: 'HEAD' })).headers.get('stream-next-offset'));
    const steps = [
        [{ method: 'POST', headers: OCTET, body: 'abc' }, 204],
        [{ method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'no' }, 409],
        [{ method: 'POST', headers: OCTET, body: 'de' }, 204],
        [{ method: 'POST', headers: OCTET, body: '' }, 400],
        [{ method: 'POST', body: new Uint8Array([9]) }, 400],
        [{ method: 'POST', headers: { ...OCTET, 'producer-id': 'x' }, body: 'zz' }, 400],
    ];
    let expected = '';
    for (const [init, status] of steps) {
        const res = await fetch(url, init);
        await res.arrayBuffer();
        assert.equal(res.status, status);
        if (status === 204) {
            expected += init.body;
            tail += init.body.length;
            assert.equal(offsetNum(res.headers.get('stream-next-offset')), tail);
        }
        const h = await fetch(url, { method: 'HEAD' });
        assert.equal(offsetNum(h.headers.get('stream-next-offset')), tail);
    }
    assert.equal(await (await fetch(url + '?offset=-1')).text(), expected);
});
