// Stream-Incarnation (extensions 2.4): the token on responses, its lifetime
// across delete and recreate, and the request precondition (412, 404 first,
// 400 for malformed values), including live reads whose stream goes away.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq, expectError, snapshot, RawConn, rawRequest, openSse, sleep } from './lib/http.mjs';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

const OCTET = { 'content-type': 'application/octet-stream' };
const JSON_CT = { 'content-type': 'application/json' };
const INC = 'stream-incarnation';
const TWO_52 = 2 ** 52;
const TWO_53 = 2 ** 53;

const streamUrl = (prefix = 'inc') => `${srv.url}/bkt-inc/${uniq(prefix)}`;

// A token as the server issues it: a canonical decimal in [2^52, 2^53).
function checkToken(token, what) {
    assert.ok(token, `${what}: no Stream-Incarnation`);
    assert.match(token, /^[1-9]\d*$/, `${what}: Stream-Incarnation ${token} is not a canonical decimal`);
    const n = Number(token);
    assert.ok(Number.isSafeInteger(n) && n >= TWO_52 && n < TWO_53,
              `${what}: Stream-Incarnation ${token} is outside [2^52, 2^53)`);
    return token;
}

// Creates a stream; returns {url, token}.
async function create(body = 'seed', headers = OCTET, url = streamUrl()) {
    const res = await fetch(url, { method: 'PUT', headers, body });
    assert.equal(res.status, 201, await res.text());
    return { url, token: checkToken(res.headers.get(INC), 'create 201') };
}

// Another valid token than `token` (so a mismatch, never a malformed value).
const otherToken = (token) => String(Number(token) === TWO_53 - 1 ? TWO_52 : Number(token) + 1);

// A read of the whole stream, for "the stream did not change" checks.
async function expectUnchanged(url, before, what) {
    assert.deepEqual(await snapshot(url), before, `${what}: the refused request changed the stream`);
}

// A HEAD request.
const head = (url, headers = {}) => fetch(url, { method: 'HEAD', headers });

// ---------------------------------------------------------------------------
// The token on responses.

test('ext 2.4: a create answers 201 with Stream-Incarnation in [2^52, 2^53), and its idempotent repeat 200 with the same token', async () => {
    const { url, token } = await create('abc');
    const again = await fetch(url, { method: 'PUT', headers: OCTET, body: 'abc' });
    assert.equal(again.status, 200, await again.text());
    assert.equal(again.headers.get(INC), token);
    // An empty create (no body) carries one too.
    const empty = await fetch(streamUrl(), { method: 'PUT', headers: OCTET });
    assert.equal(empty.status, 201);
    checkToken(empty.headers.get(INC), 'empty create');
    // A JSON stream's create too.
    const json = await fetch(streamUrl(), { method: 'PUT', headers: JSON_CT, body: '[1,2]' });
    assert.equal(json.status, 201);
    checkToken(json.headers.get(INC), 'JSON create');
});

test('ext 2.4: append and close answers carry the stream\'s Stream-Incarnation', async () => {
    const { url, token } = await create('a');
    const append = await fetch(url, { method: 'POST', headers: OCTET, body: 'b' });
    assert.equal(append.status, 204);
    assert.equal(append.headers.get(INC), token, 'append 204');
    const appendClose = await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-closed': 'true' }, body: 'c' });
    assert.equal(appendClose.status, 204);
    assert.equal(appendClose.headers.get(INC), token, 'append with close');
    const closeAgain = await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } });
    assert.equal(closeAgain.status, 204);
    assert.equal(closeAgain.headers.get(INC), token, 'repeated close-only');

    const { url: url2, token: token2 } = await create('a');
    const closeOnly = await fetch(url2, { method: 'POST', headers: { 'stream-closed': 'true' } });
    assert.equal(closeOnly.status, 204);
    assert.equal(closeOnly.headers.get(INC), token2, 'close-only');
});

test('ext 2.4: catch-up reads and HEAD carry Stream-Incarnation', async () => {
    const { url, token } = await create('hello');
    for (const q of ['?offset=-1', '?offset=00000000000000000002', '?offset=now', '']) {
        const res = await fetch(url + q);
        assert.equal(res.status, 200, `GET ${q}`);
        assert.equal(res.headers.get(INC), token, `GET ${q}`);
        await res.arrayBuffer();
    }
    const h = await head(url);
    assert.equal(h.status, 200);
    assert.equal(h.headers.get(INC), token, 'HEAD');
    // A JSON stream's read (the NDJSON/array view) too.
    const json = await create('[{"a":1}]', JSON_CT);
    const jr = await fetch(json.url + '?offset=-1');
    assert.equal(jr.status, 200);
    assert.equal(jr.headers.get(INC), json.token, 'JSON read');
    await jr.arrayBuffer();
});

test('ext 2.4: the long-poll 204 carries Stream-Incarnation', async () => {
    const { url, token } = await create('x');
    const res = await fetch(url + '?offset=now&live=long-poll&timeout_ms=50');
    assert.equal(res.status, 204);
    assert.equal(res.headers.get(INC), token);
    // A long-poll that returns data (200) too.
    const data = await fetch(url + '?offset=-1&live=long-poll&timeout_ms=50');
    assert.equal(data.status, 200);
    assert.equal(data.headers.get(INC), token);
    await data.arrayBuffer();
});

test('ext 2.4: the SSE response headers carry Stream-Incarnation', async () => {
    const { url, token } = await create('x');
    const sse = await openSse(url + '?offset=-1&live=sse');
    try {
        assert.equal(sse.res.status, 200);
        assert.match(sse.res.headers.get('content-type') ?? '', /^text\/event-stream/);
        assert.equal(sse.res.headers.get(INC), token);
    } finally {
        sse.controller.abort();
    }
});

test('ext 2.4: the base protocol\'s /v1/stream URLs carry the token and take the precondition too', async () => {
    const url = `${srv.url}/v1/stream/${uniq('v1')}`;
    const { token } = await create('[1]', JSON_CT, url);
    const read = await fetch(url + '?offset=-1');
    assert.equal(read.headers.get(INC), token);
    assert.equal(await read.text(), '[1]');
    const wrong = await fetch(url, { method: 'POST', headers: { ...JSON_CT, [INC]: otherToken(token) }, body: '2' });
    await expectError(wrong, 412, 'INCARNATION_MISMATCH');
    assert.equal(wrong.headers.get(INC), token);
    const ok = await fetch(url, { method: 'POST', headers: { ...JSON_CT, [INC]: token }, body: '2' });
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get(INC), token);
});

test('ext 2.4: a 404 for a missing stream carries no Stream-Incarnation', async () => {
    const url = streamUrl('missing');
    const answers = [
        ['GET', await fetch(url + '?offset=-1')],
        ['long-poll', await fetch(url + '?offset=-1&live=long-poll&timeout_ms=50')],
        ['SSE', await fetch(url + '?offset=-1&live=sse')],
        ['HEAD', await head(url)],
        ['POST', await fetch(url, { method: 'POST', headers: OCTET, body: 'x' })],
        ['DELETE', await fetch(url, { method: 'DELETE' })],
    ];
    for (const [what, res] of answers) {
        await expectError(res, 404, 'STREAM_NOT_FOUND', { head: what === 'HEAD' });
        assert.equal(res.headers.get(INC), null, `${what} 404 carries Stream-Incarnation`);
    }
    // A deleted stream is missing too.
    const { url: gone } = await create();
    assert.equal((await fetch(gone, { method: 'DELETE' })).status, 204);
    const res = await fetch(gone + '?offset=-1');
    await expectError(res, 404, 'STREAM_NOT_FOUND');
    assert.equal(res.headers.get(INC), null, 'GET of a deleted stream');
});

test('ext 2.4: a read beyond the tail answers 416 OFFSET_OUT_OF_RANGE with Stream-Incarnation', async () => {
    const { url, token } = await create('abc');
    for (const q of ['?offset=00000000000000000004', '?offset=00000000000000000100&live=long-poll&timeout_ms=50']) {
        const res = await fetch(url + q);
        await expectError(res, 416, 'OFFSET_OUT_OF_RANGE');
        assert.equal(res.headers.get(INC), token, `416 for ${q}`);
    }
});

// A stream "abcdef" with a snapshot at 3 and retention advanced to it (ext 2.2).
async function retainedStream() {
    const { url, token } = await create('abcdef');
    const snap = await fetch(`${url}/snapshot/00000000000000000003`, { method: 'PUT', headers: OCTET, body: 'abc' });
    assert.equal(snap.status, 204, await snap.text());
    const ret = await fetch(`${url}/retention/00000000000000000003`, { method: 'PUT' });
    assert.equal(ret.status, 204, await ret.text());
    return { url, token };
}

test('ext 2.4: a read below the retained offset answers 410 with Stream-Incarnation (catch-up, long-poll, SSE)', async () => {
    const { url, token } = await retainedStream();
    for (const q of ['?offset=00000000000000000001', '?offset=00000000000000000001&live=long-poll&timeout_ms=50',
                     '?offset=00000000000000000001&live=sse']) {
        const res = await fetch(url + q);
        await expectError(res, 410, 'STREAM_GONE');
        assert.equal(res.headers.get(INC), token, q);
    }
});

test('ext 2.4: a read with a mismatching Stream-Incarnation that would answer 410 still answers 410', async () => {
    const { url, token } = await retainedStream();
    const res = await fetch(url + '?offset=00000000000000000001', { headers: { [INC]: otherToken(token) } });
    await expectError(res, 410, 'STREAM_GONE');
    assert.equal(res.headers.get(INC), token);
});

test('ext 2.4: snapshot publish and read, retention and bootstrap carry the token and take the precondition (412, nothing applied)', async () => {
    const { url, token } = await create('abcdef');
    const wrong = { [INC]: otherToken(token) };
    const publish = await fetch(`${url}/snapshot/00000000000000000003`, { method: 'PUT', headers: { ...OCTET, [INC]: token }, body: 'abc' });
    assert.equal(publish.status, 204);
    assert.equal(publish.headers.get(INC), token, 'publish');
    const read = await fetch(`${url}/snapshot/00000000000000000003`, { headers: { [INC]: token } });
    assert.equal(read.status, 200);
    assert.equal(read.headers.get(INC), token, 'snapshot read');
    assert.equal(await read.text(), 'abc');
    const boot = await fetch(`${url}/bootstrap`, { headers: { [INC]: token } });
    assert.equal(boot.status, 200);
    assert.equal(boot.headers.get(INC), token, 'bootstrap');
    await boot.arrayBuffer();
    // A snapshot read at an offset that is not the latest: 404 naming the stream's token.
    const notLatest = await fetch(`${url}/snapshot/00000000000000000002`);
    await expectError(notLatest, 404, 'SNAPSHOT_NOT_FOUND');
    assert.equal(notLatest.headers.get(INC), token, 'snapshot 404 of an existing stream');

    // Mismatches: nothing published, nothing retained.
    const badPublish = await fetch(`${url}/snapshot/00000000000000000004`, { method: 'PUT', headers: { ...OCTET, ...wrong }, body: 'abcd' });
    await expectError(badPublish, 412, 'INCARNATION_MISMATCH');
    assert.equal(badPublish.headers.get(INC), token);
    const badRetention = await fetch(`${url}/retention/00000000000000000003`, { method: 'PUT', headers: wrong });
    await expectError(badRetention, 412, 'INCARNATION_MISMATCH');
    for (const [what, res] of [['snapshot read', await fetch(`${url}/snapshot/00000000000000000003`, { headers: wrong })],
                               ['bootstrap', await fetch(`${url}/bootstrap`, { headers: wrong })]]) {
        await expectError(res, 412, 'INCARNATION_MISMATCH');
        assert.equal(res.headers.get(INC), token, what);
    }
    const h = await head(url);
    assert.equal(h.headers.get('stream-snapshot-offset'), '00000000000000000003', 'the refused publish replaced the snapshot');
    assert.equal(h.headers.get('stream-retained-offset'), '00000000000000000000', 'the refused retention advanced');
    const ok = await fetch(`${url}/retention/00000000000000000003`, { method: 'PUT', headers: { [INC]: token } });
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get(INC), token, 'retention');
});

// ---------------------------------------------------------------------------
// The token's lifetime.

test('ext 2.4: Stream-Incarnation does not change with appends and close', async () => {
    const { url, token } = await create('a');
    for (let i = 0; i < 3; i++) {
        const res = await fetch(url, { method: 'POST', headers: OCTET, body: `b${i}` });
        assert.equal(res.status, 204);
        assert.equal(res.headers.get(INC), token);
    }
    assert.equal((await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } })).status, 204);
    assert.equal((await head(url)).headers.get(INC), token, 'HEAD after appends and close');
    const read = await fetch(url + '?offset=-1');
    assert.equal(read.headers.get(INC), token, 'read after appends and close');
    assert.equal(await read.text(), 'ab0b1b2');
});

test('ext 2.4: Stream-Incarnation changes after delete and recreate at the same URL', async () => {
    const { url, token } = await create('one');
    const seen = new Set([token]);
    for (let i = 0; i < 3; i++) {
        assert.equal((await fetch(url, { method: 'DELETE' })).status, 204);
        const again = await fetch(url, { method: 'PUT', headers: OCTET, body: 'one' });
        assert.equal(again.status, 201, 'a recreate is a create');
        const t2 = checkToken(again.headers.get(INC), 'recreate');
        assert.ok(!seen.has(t2), `recreate ${i} reused token ${t2}`);
        seen.add(t2);
        assert.equal((await head(url)).headers.get(INC), t2, 'HEAD names the new token');
    }
});

test('ext 2.4: the old token on a recreated stream answers 412 with the new token; the new one is accepted', async () => {
    const { url, token: old } = await create('old');
    assert.equal((await fetch(url, { method: 'DELETE' })).status, 204);
    const { token: fresh } = await create('new', OCTET, url);
    const before = await snapshot(url);
    const res = await fetch(url, { method: 'POST', headers: { ...OCTET, [INC]: old }, body: 'stale' });
    await expectError(res, 412, 'INCARNATION_MISMATCH');
    assert.equal(res.headers.get(INC), fresh);
    await expectUnchanged(url, before, 'POST with the old token');
    const read = await fetch(url + '?offset=-1', { headers: { [INC]: old } });
    await expectError(read, 412, 'INCARNATION_MISMATCH');
    assert.equal(read.headers.get(INC), fresh);
    const ok = await fetch(url, { method: 'POST', headers: { ...OCTET, [INC]: fresh }, body: '!' });
    assert.equal(ok.status, 204);
    assert.equal(await (await fetch(url + '?offset=-1')).text(), 'new!');
});

// ---------------------------------------------------------------------------
// The precondition.

test('ext 2.4: a matching Stream-Incarnation gets the normal answer on every request', async () => {
    const { url, token } = await create('ab');
    const h = { [INC]: token };
    const put = await fetch(url, { method: 'PUT', headers: { ...OCTET, ...h }, body: 'ab' });
    assert.equal(put.status, 200, 'idempotent PUT');
    assert.equal(put.headers.get(INC), token);
    const post = await fetch(url, { method: 'POST', headers: { ...OCTET, ...h }, body: 'cd' });
    assert.equal(post.status, 204, 'POST');
    const get = await fetch(url + '?offset=-1', { headers: h });
    assert.equal(get.status, 200, 'GET');
    assert.equal(await get.text(), 'abcd');
    const hd = await head(url, h);
    assert.equal(hd.status, 200, 'HEAD');
    assert.equal(hd.headers.get(INC), token);
    const poll = await fetch(url + '?offset=now&live=long-poll&timeout_ms=50', { headers: h });
    assert.equal(poll.status, 204, 'long-poll');
    const sse = await openSse(url + '?offset=-1&live=sse', { headers: h });
    try {
        assert.equal(sse.res.status, 200, 'SSE');
    } finally {
        sse.controller.abort();
    }
    const close = await fetch(url, { method: 'POST', headers: { ...h, 'stream-closed': 'true' } });
    assert.equal(close.status, 204, 'close');
    const del = await fetch(url, { method: 'DELETE', headers: h });
    assert.equal(del.status, 204, 'DELETE');
    assert.equal((await head(url)).status, 404);
});

test('ext 2.4: a mismatching Stream-Incarnation on POST answers 412 INCARNATION_MISMATCH with the current token, nothing applied', async () => {
    const { url, token } = await create('ab');
    const wrong = otherToken(token);
    const before = await snapshot(url);
    for (const [what, init] of [
        ['append', { method: 'POST', headers: { ...OCTET, [INC]: wrong }, body: 'cd' }],
        ['append and close', { method: 'POST', headers: { ...OCTET, [INC]: wrong, 'stream-closed': 'true' }, body: 'cd' }],
        ['close-only', { method: 'POST', headers: { [INC]: wrong, 'stream-closed': 'true' } }],
        ['producer append', { method: 'POST', body: 'cd',
                              headers: { ...OCTET, [INC]: wrong, 'producer-id': 'p', 'producer-epoch': '0', 'producer-seq': '0' } }],
    ]) {
        const res = await fetch(url, init);
        await expectError(res, 412, 'INCARNATION_MISMATCH');
        assert.equal(res.headers.get(INC), token, what);
        await expectUnchanged(url, before, what);
    }
    // The refused producer write left no producer state: seq 0 is still new.
    const fresh = await fetch(url, { method: 'POST', body: 'ef',
                                     headers: { ...OCTET, 'producer-id': 'p', 'producer-epoch': '0', 'producer-seq': '0' } });
    assert.equal(fresh.status, 200, 'the refused producer write must not hold its key');
});

test('ext 2.4: a mismatching Stream-Incarnation on GET (catch-up, long-poll, SSE) answers 412 with the current token and no data', async () => {
    const { url, token } = await create('secret');
    const wrong = otherToken(token);
    for (const q of ['?offset=-1', '?offset=now&live=long-poll&timeout_ms=50', '?offset=-1&live=long-poll&timeout_ms=50',
                     '?offset=-1&live=sse']) {
        const res = await fetch(url + q, { headers: { [INC]: wrong } });
        const body = await expectError(res, 412, 'INCARNATION_MISMATCH');
        assert.equal(res.headers.get(INC), token, q);
        assert.ok(!JSON.stringify(body).includes('secret'), `${q}: the 412 carries stream data`);
    }
});

test('ext 2.4: a mismatching Stream-Incarnation on HEAD answers 412 with the current token', async () => {
    const { url, token } = await create('x');
    const res = await head(url, { [INC]: otherToken(token) });
    await expectError(res, 412, 'INCARNATION_MISMATCH', { head: true });
    assert.equal(res.headers.get(INC), token);
});

test('ext 2.4: a mismatching Stream-Incarnation on DELETE answers 412 with the current token and deletes nothing', async () => {
    const { url, token } = await create('keep');
    const before = await snapshot(url);
    const res = await fetch(url, { method: 'DELETE', headers: { [INC]: otherToken(token) } });
    await expectError(res, 412, 'INCARNATION_MISMATCH');
    assert.equal(res.headers.get(INC), token);
    await expectUnchanged(url, before, 'DELETE');
    assert.equal((await head(url)).headers.get(INC), token, 'the stream keeps its token');
});

test('ext 2.4: a mismatching Stream-Incarnation on PUT of an existing stream answers 412 with the current token, nothing changed', async () => {
    const { url, token } = await create('abc');
    const before = await snapshot(url);
    // The same configuration (otherwise an idempotent 200) and another one (otherwise a 409).
    for (const [what, init] of [
        ['same config', { method: 'PUT', headers: { ...OCTET, [INC]: otherToken(token) }, body: 'abc' }],
        ['other config', { method: 'PUT', headers: { 'content-type': 'text/plain', [INC]: otherToken(token) }, body: 'zzz' }],
    ]) {
        const res = await fetch(url, init);
        await expectError(res, 412, 'INCARNATION_MISMATCH');
        assert.equal(res.headers.get(INC), token, what);
        await expectUnchanged(url, before, what);
    }
});

// Section 2.4 says 412 is "not 409, so it never mixes with Stream-Seq and
// producer conflicts", and RFC 9110 13.2.1 lets only failures found before
// processing win over a precondition. dstream checks the token right after
// the stream is found, so a write from a retired incarnation gets 412 rather
// than a conflict computed against another incarnation's state.
test('ext 2.4: a mismatching Stream-Incarnation is answered 412 before Stream-Seq, producer, closed-stream and content-type conflicts', async () => {
    const { url, token } = await create('a');
    const P = (epoch, seq) => ({ 'producer-id': 'p', 'producer-epoch': String(epoch), 'producer-seq': String(seq) });
    assert.equal((await fetch(url, { method: 'POST', headers: { ...OCTET, ...P(0, 0), 'stream-seq': '5' }, body: 'b' })).status, 200);
    assert.equal((await fetch(url, { method: 'POST', headers: { ...OCTET, ...P(1, 0) }, body: 'c' })).status, 200);
    const wrong = { [INC]: otherToken(token) };
    const before = await snapshot(url);
    for (const [what, headers] of [
        ['Stream-Seq conflict', { ...OCTET, 'stream-seq': '1' }],
        ['producer seq gap', { ...OCTET, ...P(1, 5) }],
        ['closed epoch', { ...OCTET, ...P(0, 1) }],
        ['content type', { 'content-type': 'text/plain' }],
        ['repeat', { ...OCTET, ...P(1, 0) }],
    ]) {
        const res = await fetch(url, { method: 'POST', headers: { ...headers, ...wrong }, body: 'c' });
        await expectError(res, 412, 'INCARNATION_MISMATCH');
        assert.equal(res.headers.get(INC), token, what);
        assert.equal(res.headers.get('producer-outcome'), null, what);
        assert.equal(res.headers.get('stream-last-seq'), null, what);
    }
    assert.equal((await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } })).status, 204);
    const closed = await fetch(url, { method: 'POST', headers: { ...OCTET, ...wrong }, body: 'd' });
    await expectError(closed, 412, 'INCARNATION_MISMATCH');
    assert.equal((await snapshot(url)).body, before.body);
});

test('ext 2.4: a PUT with Stream-Incarnation for a missing stream answers 412 and creates nothing', async () => {
    const url = streamUrl('nocreate');
    const res = await fetch(url, { method: 'PUT', headers: { ...OCTET, [INC]: String(TWO_52 + 12345) }, body: 'x' });
    await expectError(res, 412, 'INCARNATION_MISMATCH');
    assert.equal(res.headers.get(INC), null, 'no stream, so no token');
    assert.equal((await head(url)).status, 404, 'the refused PUT created the stream');
    // The same after a delete: a token of the deleted stream recreates nothing.
    const { url: gone, token } = await create('x');
    assert.equal((await fetch(gone, { method: 'DELETE' })).status, 204);
    const again = await fetch(gone, { method: 'PUT', headers: { ...OCTET, [INC]: token }, body: 'x' });
    await expectError(again, 412, 'INCARNATION_MISMATCH');
    assert.equal((await head(gone)).status, 404, 'the refused PUT recreated the stream');
});

test('ext 2.4: a request with Stream-Incarnation that would answer 404 still answers 404', async () => {
    const url = streamUrl('missing');
    const h = { [INC]: String(TWO_52 + 777) };
    await expectError(await fetch(url, { method: 'POST', headers: { ...OCTET, ...h }, body: 'x' }), 404, 'STREAM_NOT_FOUND');
    await expectError(await fetch(url, { method: 'POST', headers: { ...h, 'stream-closed': 'true' } }), 404, 'STREAM_NOT_FOUND');
    await expectError(await fetch(url + '?offset=-1', { headers: h }), 404, 'STREAM_NOT_FOUND');
    await expectError(await fetch(url + '?offset=-1&live=long-poll&timeout_ms=50', { headers: h }), 404, 'STREAM_NOT_FOUND');
    await expectError(await fetch(url + '?offset=-1&live=sse', { headers: h }), 404, 'STREAM_NOT_FOUND');
    await expectError(await head(url, h), 404, 'STREAM_NOT_FOUND', { head: true });
    await expectError(await fetch(url, { method: 'DELETE', headers: h }), 404, 'STREAM_NOT_FOUND');
    assert.equal((await head(url)).status, 404);
});

test('ext 2.4: a read with a mismatching Stream-Incarnation that would answer 416 still answers 416', async () => {
    const { url, token } = await create('abc');
    for (const q of ['?offset=00000000000000000009', '?offset=00000000000000000009&live=long-poll&timeout_ms=50']) {
        const res = await fetch(url + q, { headers: { [INC]: otherToken(token) } });
        await expectError(res, 416, 'OFFSET_OUT_OF_RANGE');
        assert.equal(res.headers.get(INC), token, q);
    }
});

test('ext 2.4: a malformed Stream-Incarnation ("abc", "123", 2^53, 2^52 - 1, leading zero, sign) answers 400, nothing applied', async () => {
    const { url, token } = await create('abc');
    const before = await snapshot(url);
    const bad = ['abc', '123', String(TWO_53), '9007199254740992', String(TWO_52 - 1), `0${token}`, `+${token}`,
                 `${token}x`, '-1', '1e15', '18446744073709551616'];
    for (const value of bad) {
        const h = { [INC]: value };
        const answers = [
            ['GET', await fetch(url + '?offset=-1', { headers: h })],
            ['HEAD', await head(url, h)],
            ['POST', await fetch(url, { method: 'POST', headers: { ...OCTET, ...h }, body: 'x' })],
            ['PUT', await fetch(url, { method: 'PUT', headers: { ...OCTET, ...h }, body: 'abc' })],
            ['DELETE', await fetch(url, { method: 'DELETE', headers: h })],
        ];
        for (const [what, res] of answers) {
            const text = what === 'HEAD' ? '' : await res.text();
            assert.equal(res.status, 400, `${what} with Stream-Incarnation: ${value}: ${res.status} ${text}`);
        }
        await expectUnchanged(url, before, `Stream-Incarnation: ${value}`);
    }
    // A malformed value for a missing stream: 400 too (a malformed request, not a precondition).
    const missing = streamUrl('missing');
    const res = await fetch(missing, { method: 'PUT', headers: { ...OCTET, [INC]: 'abc' }, body: 'x' });
    assert.equal(res.status, 400);
    assert.equal((await head(missing)).status, 404);
});

test('ext 2.4 / 5.3: a malformed Stream-Incarnation is a request-shape fault: 400 before 404 for a missing stream', async () => {
    const url = streamUrl('missing');
    const h = { [INC]: 'abc' };
    for (const [what, res] of [
        ['POST', await fetch(url, { method: 'POST', headers: { ...OCTET, ...h }, body: 'x' })],
        ['GET', await fetch(url + '?offset=-1', { headers: h })],
        ['DELETE', await fetch(url, { method: 'DELETE', headers: h })],
    ]) {
        const text = await res.text();
        assert.equal(res.status, 400, `${what}: ${res.status} ${text}`);
    }
});

test('ext 2.4: a producer write with a matching Stream-Incarnation applies with its receipt', async () => {
    const { url, token } = await create('ab');
    const res = await fetch(url, { method: 'POST', body: 'cd',
                                   headers: { ...OCTET, [INC]: token, 'producer-id': 'p', 'producer-epoch': '0', 'producer-seq': '0' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers.get(INC), token);
    assert.equal(res.headers.get('stream-offset'), '00000000000000000002');
});

test('ext 2.4: an empty Stream-Incarnation answers 400 (raw socket)', async () => {
    const { url, token } = await create('abc');
    const path = new URL(url).pathname;
    const conn = await RawConn.open(srv.leaderPort, srv.leaderHost);
    try {
        await conn.write(rawRequest('GET', `${path}?offset=-1`, { headers: { 'Stream-Incarnation': '' } }));
        const get = await conn.readResponse();
        assert.equal(get.status, 400, `GET: ${get.rawHeaders}`);
        assert.match(get.headers['content-type'] ?? '', /^application\/json/);
    } finally {
        conn.destroy();
    }
    const before = await snapshot(url);
    for (const [method, opts] of [['POST', { headers: { 'Content-Type': 'application/octet-stream', 'Stream-Incarnation': '' }, body: 'x' }],
                                  ['DELETE', { headers: { 'Stream-Incarnation': '' } }]]) {
        const c = await RawConn.open(srv.leaderPort, srv.leaderHost);
        try {
            await c.write(rawRequest(method, path, opts));
            const res = await c.readResponse();
            assert.equal(res.status, 400, `${method}: ${res.rawHeaders}`);
        } finally {
            c.destroy();
        }
    }
    await expectUnchanged(url, before, 'empty Stream-Incarnation');
    assert.equal((await head(url)).headers.get(INC), token);
});

test('ext 2.4: Stream-Incarnation sent twice answers 400, even with the right token twice', async () => {
    const { url, token } = await create('abc');
    const path = new URL(url).pathname;
    const before = await snapshot(url);
    const cases = [
        ['GET', `${path}?offset=-1`, {}],
        ['HEAD', path, {}],
        ['POST', path, { body: 'x', ct: true }],
        ['DELETE', path, {}],
    ];
    for (const [method, target, { body = null, ct = false }] of cases) {
        const bytes = `${method} ${target} HTTP/1.1\r\nHost: localhost\r\n` +
            (ct ? 'Content-Type: application/octet-stream\r\n' : '') +
            `Stream-Incarnation: ${token}\r\nStream-Incarnation: ${token}\r\n` +
            (body !== null ? `Content-Length: ${Buffer.byteLength(body)}\r\n` : '') + '\r\n' + (body ?? '');
        const conn = await RawConn.open(srv.leaderPort, srv.leaderHost);
        try {
            await conn.write(bytes);
            const res = await conn.readResponse({ noBody: method === 'HEAD' });
            assert.equal(res.status, 400, `${method} with the header twice: ${res.rawHeaders}`);
        } finally {
            conn.destroy();
        }
    }
    // The list form of one field line is two values too.
    const listed = await fetch(url + '?offset=-1', { headers: { [INC]: `${token}, ${token}` } });
    assert.equal(listed.status, 400, 'Stream-Incarnation: T, T');
    await listed.arrayBuffer();
    await expectUnchanged(url, before, 'Stream-Incarnation twice');
});

// ---------------------------------------------------------------------------
// Live reads whose stream goes away.

// Opens a long-poll at the tail, runs `act` ~300 ms into the wait, and returns
// the poll's answer with the time it took.
async function pollAcross(url, headers, act) {
    const started = Date.now();
    const poll = fetch(url + '?offset=now&live=long-poll&timeout_ms=5000', { headers });
    await sleep(300);
    await act();
    const res = await poll;
    return { res, ms: Date.now() - started };
}

test('ext 2.4: a long-poll whose stream is deleted while it waits ends with 404 (with and without Stream-Incarnation)', async () => {
    for (const withToken of [false, true]) {
        const { url, token } = await create('x');
        const headers = withToken ? { [INC]: token } : {};
        const { res, ms } = await pollAcross(url, headers, async () => {
            assert.equal((await fetch(url, { method: 'DELETE' })).status, 204);
        });
        await expectError(res, 404, 'STREAM_NOT_FOUND');
        assert.equal(res.headers.get(INC), null);
        assert.ok(ms < 4000, `the poll waited ${ms} ms: it should end when its stream is deleted`);
    }
});

// The spec lets a live read whose stream is deleted and recreated answer 404
// or 412. A delete followed by a create wakes the poll at the delete, so it
// usually sees the gap (404); when the recreate applies before the poll reads
// again (as when both land together) it sees the new incarnation (412). Both
// must end the poll at once, and a 412 must name the new token.
test('ext 2.4: a long-poll with Stream-Incarnation whose stream is deleted and recreated while it waits ends with 404 or 412 naming the new token', async () => {
    const { url, token } = await create('x');
    let fresh;
    const { res, ms } = await pollAcross(url, { [INC]: token }, async () => {
        assert.equal((await fetch(url, { method: 'DELETE' })).status, 204);
        fresh = (await create('y', OCTET, url)).token;
    });
    if (res.status === 404) {
        await expectError(res, 404, 'STREAM_NOT_FOUND');
    } else {
        await expectError(res, 412, 'INCARNATION_MISMATCH');
        assert.equal(res.headers.get(INC), fresh);
    }
    assert.ok(ms < 4000, `the poll waited ${ms} ms: it should end when its stream is deleted and recreated`);
});

test('ext 2.4: a long-poll without Stream-Incarnation whose stream is deleted and recreated ends (404 or 412), serving nothing of the new stream', async () => {
    const { url } = await create('x');
    const { res, ms } = await pollAcross(url, {}, async () => {
        assert.equal((await fetch(url, { method: 'DELETE' })).status, 204);
        await create('new-bytes', OCTET, url);
    });
    const text = await res.text();
    assert.ok(res.status === 404 || res.status === 412, `expected 404 or 412, got ${res.status}: ${text}`);
    assert.ok(!text.includes('new-bytes'), 'the poll served the new stream\'s bytes');
    assert.ok(ms < 4000, `the poll waited ${ms} ms`);
});

test('ext 2.4 / 11: an SSE read whose stream is deleted ends with an error event carrying the JSON error body', async () => {
    const { url } = await create('first');
    const sse = await openSse(url + '?offset=-1&live=sse');
    assert.equal(sse.res.status, 200);
    // Delete once the first events have arrived, then read to the end.
    setTimeout(() => { fetch(url, { method: 'DELETE' }).then((r) => r.arrayBuffer()).catch(() => {}); }, 300);
    const { events, ended } = await sse.read({ done: (evs) => evs.some((e) => e.event === 'error'), ms: 4000 });
    const error = events.find((e) => e.event === 'error');
    assert.ok(error, `no error event; events: ${JSON.stringify(events)} ended=${ended}`);
    assert.ok(!error.data.includes('\n'), 'the error body is on one line');
    const body = JSON.parse(error.data);
    assert.equal(typeof body.error, 'object', error.data);
    assert.equal(body.error.code, 'STREAM_NOT_FOUND', error.data);
    assert.equal(typeof body.error.message, 'string', error.data);
    assert.equal(events.at(-1).event, 'error', 'the error event is the last one');
});

test('ext 2.4 / 11: an SSE read with Stream-Incarnation whose stream is deleted and recreated ends with an error event, never the new bytes', async () => {
    const { url, token } = await create('first');
    const sse = await openSse(url + '?offset=-1&live=sse', { headers: { [INC]: token } });
    assert.equal(sse.res.status, 200);
    setTimeout(async () => {
        try {
            await (await fetch(url, { method: 'DELETE' })).arrayBuffer();
            await (await fetch(url, { method: 'PUT', headers: OCTET, body: 'NEWBYTES' })).arrayBuffer();
        } catch { /* the assertions below report it */ }
    }, 300);
    const { events, raw } = await sse.read({ done: (evs) => evs.some((e) => e.event === 'error'), ms: 4000 });
    const error = events.find((e) => e.event === 'error');
    assert.ok(error, `no error event: ${raw}`);
    const code = JSON.parse(error.data).error.code;
    assert.ok(code === 'STREAM_NOT_FOUND' || code === 'INCARNATION_MISMATCH', error.data);
    assert.ok(!raw.includes(Buffer.from('NEWBYTES').toString('base64')) && !raw.includes('NEWBYTES'),
              'the SSE read served the new stream');
});

test('ext 2.4: Stream-Incarnation does not change across a crash and restart (checkpoint and log replay); a recreate after it gets a new one', async () => {
    const dur = await startServer({ memory: false, extraArgs: ['--checkpoint-bytes', '65536'] });
    let live = dur;
    try {
        const mk = async (url, body) => {
            const res = await fetch(url, { method: 'PUT', headers: OCTET, body });
            assert.equal(res.status, 201);
            return checkToken(res.headers.get(INC), 'create');
        };
        // One stream in a checkpoint, one only in the log after it.
        const a = `${dur.url}/bkt-inc/${uniq('dur-a')}`;
        const tokenA = await mk(a, 'a');
        assert.equal((await fetch(a, { method: 'POST', headers: OCTET, body: Buffer.alloc(70_000, 0x62) })).status, 204);
        const ckptDir = path.join(dur.dataDir, 'checkpoints');
        for (let i = 0; i < 40 && !(existsSync(ckptDir) && readdirSync(ckptDir).length > 0); i++) await sleep(50);
        const b = `${dur.url}/bkt-inc/${uniq('dur-b')}`;
        const tokenB = await mk(b, 'b');
        // A stream deleted and recreated before the restart.
        const c = `${dur.url}/bkt-inc/${uniq('dur-c')}`;
        const tokenC0 = await mk(c, 'c');
        assert.equal((await fetch(c, { method: 'DELETE' })).status, 204);
        const tokenC = await mk(c, 'c');
        assert.notEqual(tokenC, tokenC0);

        live = await dur.crashAndRestart();
        for (const [url, token] of [[a, tokenA], [b, tokenB], [c, tokenC]]) {
            const h = await fetch(url, { method: 'HEAD' });
            assert.equal(h.status, 200);
            assert.equal(h.headers.get(INC), token, `${url} after the restart`);
            // The token still passes as a precondition.
            const post = await fetch(url, { method: 'POST', headers: { ...OCTET, [INC]: token }, body: '!' });
            assert.equal(post.status, 204, `${url}: POST with the pre-restart token`);
        }
        const stale = await fetch(c, { method: 'POST', headers: { ...OCTET, [INC]: tokenC0 }, body: '!' });
        await expectError(stale, 412, 'INCARNATION_MISMATCH');
        // A recreate after the restart gets a token unlike any before it.
        assert.equal((await fetch(b, { method: 'DELETE' })).status, 204);
        const tokenB2 = await mk(b, 'b');
        assert.ok(![tokenA, tokenB, tokenC0, tokenC].includes(tokenB2), `recreate after restart reused ${tokenB2}`);
    } finally {
        await live.stop();
    }
});
