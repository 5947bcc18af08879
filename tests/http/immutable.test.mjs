// extensions 4 (and immutable-reads.txt): immutable chunk and snapshot
// resources named by the incarnation token, the 4 MiB grid and the
// Stream-Immutable marker.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq, expectError } from './lib/http.mjs';

const MiB = 1024 * 1024;
const off = (n) => String(n).padStart(20, '0');
let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv.stop(); });

async function create(body = 'hello', type = 'application/octet-stream') {
    const url = `${srv.url}/immutable-test/${uniq()}`;
    const res = await fetch(url, { method: 'PUT', headers: { 'Content-Type': type }, body });
    assert.equal(res.status, 201);
    return { url, token: res.headers.get('stream-incarnation') };
}
const chunk = (s, offset, token = s.token) => `${s.url}/incarnation/${token}/chunk/${off(offset)}`;

test('ext 4.3: a chunk ending at an open tail is not marked; no Stream-Up-To-Date or Stream-Cursor; no-store', async () => {
    const s = await create('hello');
    const res = await fetch(chunk(s, 0));
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'hello');
    assert.equal(res.headers.get('stream-immutable'), null);
    assert.equal(res.headers.get('stream-offset'), off(0));
    assert.equal(res.headers.get('stream-next-offset'), off(5));
    assert.equal(res.headers.get('stream-incarnation'), s.token);
    assert.equal(res.headers.get('stream-up-to-date'), null);
    assert.equal(res.headers.get('stream-cursor'), null);
    assert.equal(res.headers.get('cache-control'), 'no-store');
    assert.ok(res.headers.get('etag'));
});

test('ext 4.3: a chunk ending at the tail of a closed stream is marked and carries Stream-Closed, even when empty', async () => {
    const s = await create('hello');
    await fetch(s.url, { method: 'POST', headers: { 'Stream-Closed': 'true' } });
    let res = await fetch(chunk(s, 0));
    assert.equal(res.headers.get('stream-immutable'), 'true');
    assert.equal(res.headers.get('stream-closed'), 'true');
    res = await fetch(chunk(s, 5));
    assert.equal(res.status, 200);
    assert.equal((await res.arrayBuffer()).byteLength, 0);
    assert.equal(res.headers.get('stream-immutable'), 'true');
});

test('ext 4.2 / 4.3: chunks follow the 4 MiB grid; a full cell below the tail is marked, and its ETag survives closing', async () => {
    const s = await create(Buffer.alloc(5 * MiB, 7));
    let res = await fetch(chunk(s, 1000));
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(body.length, 4 * MiB - 1000);
    assert.equal(res.headers.get('stream-next-offset'), off(4 * MiB));
    assert.equal(res.headers.get('stream-immutable'), 'true');
    const etag = res.headers.get('etag');
    res = await fetch(chunk(s, 4 * MiB));
    assert.equal((await res.arrayBuffer()).byteLength, MiB);
    assert.equal(res.headers.get('stream-immutable'), null, 'ends at the open tail');
    await fetch(s.url, { method: 'POST', headers: { 'Stream-Closed': 'true' } });
    res = await fetch(chunk(s, 1000));
    await res.arrayBuffer();
    assert.equal(res.headers.get('etag'), etag);
});

test('ext 4.3: a 304 for a marked chunk keeps the marker and the headers', async () => {
    const s = await create('abc');
    await fetch(s.url, { method: 'POST', headers: { 'Stream-Closed': 'true' } });
    const first = await fetch(chunk(s, 0));
    await first.arrayBuffer();
    const res = await fetch(chunk(s, 0), { headers: { 'If-None-Match': `W/${first.headers.get('etag')}` } });
    assert.equal(res.status, 304);
    assert.equal(res.headers.get('stream-immutable'), 'true');
    assert.equal(res.headers.get('stream-next-offset'), off(3));
    assert.equal(res.headers.get('stream-incarnation'), s.token);
});

test('ext 4.1: another token answers 412 with the current Stream-Incarnation', async () => {
    const s = await create('abc');
    const other = String(BigInt(s.token) === 4503599627370496n ? 4503599627370497n : 4503599627370496n);
    const res = await fetch(chunk(s, 0, other));
    await expectError(res, 412, 'INCARNATION_MISMATCH');
    assert.equal(res.headers.get('stream-incarnation'), s.token);
});

test('ext 4.1: 416 beyond the tail, 404 for a missing stream, 410 below retention (each before 412)', async () => {
    const s = await create('abcdef');
    let res = await fetch(chunk(s, 99, '4503599627370496'));
    await expectError(res, 416, 'OFFSET_OUT_OF_RANGE');
    res = await fetch(`${srv.url}/immutable-test/${uniq()}/incarnation/${s.token}/chunk/${off(0)}`);
    await expectError(res, 404, 'STREAM_NOT_FOUND');
    await fetch(`${s.url}/snapshot/${off(4)}`, { method: 'PUT', body: 'snap' });
    assert.equal((await fetch(`${s.url}/retention/${off(4)}`, { method: 'PUT' })).status, 204);
    res = await fetch(chunk(s, 2, '4503599627370496'));
    await expectError(res, 410, 'STREAM_GONE');
});

test('ext 4.1: a query answers 400 QUERY_NOT_ACCEPTED, a malformed token or offset 400 INVALID_RESOURCE, another kind 404', async () => {
    const s = await create('abc');
    await expectError(await fetch(`${chunk(s, 0)}?x=1`), 400, 'QUERY_NOT_ACCEPTED');
    await expectError(await fetch(`${s.url}/incarnation/12/chunk/${off(0)}`), 400, 'INVALID_RESOURCE');
    await expectError(await fetch(`${s.url}/incarnation/${s.token}/chunk/5`), 400, 'INVALID_RESOURCE');
    await expectError(await fetch(`${s.url}/incarnation/${s.token}/blob/${off(0)}`), 404, 'NOT_FOUND');
});

test('immutable-reads 416: a range past the snapshot keeps the snapshot headers and Content-Range, without the marker', async () => {
    const s = await create('abcdef');
    const put = await fetch(`${s.url}/snapshot/${off(6)}`, { method: 'PUT', headers: { 'Content-Type': 'text/x-state' }, body: 'state!' });
    assert.equal(put.status, 204);
    const digest = put.headers.get('stream-snapshot-digest');
    for (const url of [`${s.url}/incarnation/${s.token}/snapshot/${off(6)}`, `${s.url}/snapshot/${off(6)}`]) {
        const res = await fetch(url, { headers: { Range: 'bytes=6-' } });
        await expectError(res, 416, 'RANGE_NOT_SATISFIABLE');
        assert.equal(res.headers.get('content-range'), 'bytes */6', url);
        assert.equal(res.headers.get('stream-snapshot-offset'), off(6), url);
        assert.equal(res.headers.get('stream-snapshot-digest'), digest, url);
        assert.equal(res.headers.get('stream-next-offset'), off(6), url);
        assert.equal(res.headers.get('etag'), `"${digest}"`, url);
        assert.equal(res.headers.get('accept-ranges'), 'bytes', url);
        assert.equal(res.headers.get('stream-incarnation'), s.token, url);
        assert.equal(res.headers.get('stream-immutable'), null, `${url}: a 416 is not marked`);
        assert.equal(res.headers.get('stream-up-to-date'), null, url);
    }
});

test('ext 4.1 / 4.3: the immutable snapshot resource is always marked, with the digest as ETag', async () => {
    const s = await create('abcdef');
    const put = await fetch(`${s.url}/snapshot/${off(6)}`, { method: 'PUT', headers: { 'Content-Type': 'text/x-state' }, body: 'state!' });
    assert.equal(put.status, 204);
    const digest = put.headers.get('stream-snapshot-digest');
    const res = await fetch(`${s.url}/incarnation/${s.token}/snapshot/${off(6)}`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'state!');
    assert.equal(res.headers.get('stream-immutable'), 'true');
    assert.equal(res.headers.get('etag'), `"${digest}"`);
    assert.equal(res.headers.get('stream-next-offset'), off(6));
    assert.equal(res.headers.get('stream-up-to-date'), null);
    const ranged = await fetch(`${s.url}/incarnation/${s.token}/snapshot/${off(6)}`, { headers: { Range: 'bytes=1-2' } });
    assert.equal(ranged.status, 206);
    assert.equal(await ranged.text(), 'ta');
    assert.equal(ranged.headers.get('stream-immutable'), 'true');
    const wrong = await fetch(`${s.url}/incarnation/4503599627370496/snapshot/${off(6)}`);
    if (s.token !== '4503599627370496') await expectError(wrong, 412, 'INCARNATION_MISMATCH');
    await expectError(await fetch(`${s.url}/incarnation/${s.token}/snapshot/${off(3)}`), 404, 'SNAPSHOT_NOT_FOUND');
});
