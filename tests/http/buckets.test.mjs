// Buckets, identifiers and routing (extensions 1.1, 1.2, 1.6; reserved paths).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq, expectError, snapshot } from './lib/http.mjs';
import { parsePrometheus, value } from './lib/prometheus.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

const put = (path, init = {}) => fetch(srv.url + path, { method: 'PUT', ...init });
const head = (path) => fetch(srv.url + path, { method: 'HEAD' });

// What a request could change on the node: its streams and their bytes.
async function nodeState() {
    const m = parsePrometheus(await (await fetch(`${srv.url}/__ursula/metrics`)).text());
    const figures = {};
    for (const name of ['dstream_streams', 'dstream_appends_total', 'dstream_appended_bytes_total', 'dstream_hot_bytes']) {
        figures[name] = value(m, name);
        assert.equal(typeof figures[name], 'number', `metric ${name}`);
    }
    return figures;
}

test('ext 1.2: PUT /{bucket_id} answers 201 for a valid bucket id and changes no state', async () => {
    // A stream in one of the buckets, and the node's figures, before.
    const kept = `/bkt-state/${uniq('kept')}`;
    assert.equal((await put(kept, { headers: { 'content-type': 'text/plain' }, body: 'kept bytes' })).status, 201);
    const keptBefore = { ...(await snapshot(srv.url + kept)), incarnation: (await head(kept)).headers.get('stream-incarnation') };
    const nodeBefore = await nodeState();
    assert.ok(nodeBefore.dstream_streams >= 1, 'the metrics count the stream made above');
    for (const id of ['abcd', 'a-b_', '0000', 'bucket_name-01', 'x'.repeat(64), 'bkt-state']) {
        const res = await put('/' + id);
        assert.equal(res.status, 201, `${id}: ${await res.text()}`);
        // Repeating it is fine: buckets are implicit.
        assert.equal((await put('/' + id)).status, 201);
        // No stream at the bucket's own path, on either surface.
        assert.notEqual((await head('/' + id)).status, 200, `HEAD /${id} finds no stream`);
        assert.equal((await head(`/v1/stream/${id}`)).status, 404, `HEAD /v1/stream/${id} finds no stream`);
    }
    // Nothing was created, written, closed or replaced.
    assert.deepEqual(await nodeState(), nodeBefore, 'the node holds the same streams and bytes');
    const keptAfter = { ...(await snapshot(srv.url + kept)), incarnation: (await head(kept)).headers.get('stream-incarnation') };
    assert.deepEqual(keptAfter, keptBefore, 'the stream in the bucket is unchanged');
    assert.equal(Buffer.from(keptAfter.body, 'base64').toString(), 'kept bytes');
});

test('ext 1.1: bucket id must match ^[a-z0-9_-]{4,64}$ (PUT /{bucket_id} -> 400 INVALID_BUCKET_ID)', async () => {
    for (const id of ['abc', 'ABCD', 'abcD', 'x'.repeat(65), 'ab.cd', 'ab cd', 'abc%21', 'caf%C3%A9', 'a%2Fbc']) {
        const res = await put('/' + id);
        await expectError(res, 400, 'INVALID_BUCKET_ID');
    }
});

test('ext 1.1: a stream under an invalid bucket id is refused with 400 INVALID_BUCKET_ID and not created', async () => {
    for (const bucket of ['abc', 'ABCD', 'x'.repeat(65)]) {
        const res = await put(`/${bucket}/s1`, { headers: { 'content-type': 'text/plain' }, body: 'x' });
        await expectError(res, 400, 'INVALID_BUCKET_ID');
        const h = await head(`/${bucket}/s1`);
        assert.equal(h.status, 400);
    }
});

test('ext 1.2: a stream create needs no earlier bucket create', async () => {
    const bucket = 'fresh' + Date.now().toString(36);
    const res = await put(`/${bucket}/${uniq()}`);
    assert.equal(res.status, 201, await res.text());
});

test('ext 1.1: a stream id starting with $ is refused (400 INVALID_STREAM_ID)', async () => {
    for (const id of ['$x', '$transaction', '%24x']) {
        const res = await put(`/bkt-ids/${id}`);
        await expectError(res, 400, 'INVALID_STREAM_ID');
    }
});

test('ext 1.1: the stream id "streams" is reserved (400 INVALID_STREAM_ID)', async () => {
    await expectError(await put('/bkt-ids/streams'), 400, 'INVALID_STREAM_ID');
});

test('ext 1.1: a stream id containing ".." or NUL is refused (400 INVALID_STREAM_ID)', async () => {
    // (A bare '..' segment would be normalized away by the URL parser.)
    for (const id of ['a..b', '..a', 'a%00b', '%00']) {
        await expectError(await put(`/bkt-ids/${id}`), 400, 'INVALID_STREAM_ID');
    }
});

test('ext 1.1: a stream id containing "/" (percent-encoded) is refused with 400 and creates nothing', async () => {
    const res = await put('/bkt-ids/a%2Fb');
    await expectError(res, 400, 'INVALID_STREAM_ID');
    assert.notEqual((await head('/bkt-ids/a%2Fb')).status, 200);
});

test('ext 1.1: the combined {bucket_id}/{stream_id} key may be 122 bytes but not 123', async () => {
    const bucket = 'bkt-long';                       // 8 bytes + '/' = 9
    const ok = 'a'.repeat(122 - 9);
    const res = await put(`/${bucket}/${ok}`);
    assert.equal(res.status, 201, await res.text());
    const tooLong = 'a'.repeat(122 - 9 + 1);
    await expectError(await put(`/${bucket}/${tooLong}`), 400, 'INVALID_STREAM_ID');
    assert.equal((await head(`/${bucket}/${tooLong}`)).status, 400);
    // Bytes, not characters: 'é' is two bytes in UTF-8.
    const multi = 'é'.repeat(57); // 114 bytes + 9 = 123
    await expectError(await put(`/${bucket}/${encodeURIComponent(multi)}`), 400, 'INVALID_STREAM_ID');
    const multiOk = 'é'.repeat(56) + 'a'; // 113 bytes + 9 = 122
    assert.equal((await put(`/${bucket}/${encodeURIComponent(multiOk)}`)).status, 201);
});

test('ext 1.1: a /v1/stream id longer than 122 bytes is refused (400 INVALID_STREAM_ID)', async () => {
    assert.equal((await put(`/v1/stream/${'b'.repeat(122)}`)).status, 201);
    await expectError(await put(`/v1/stream/${'b'.repeat(123)}`), 400, 'INVALID_STREAM_ID');
});

test('ext 1.1: a stream id is any UTF-8 string (percent-encoded path segment round-trips)', async () => {
    const id = encodeURIComponent('üñí code ✓');
    const res = await put(`/bkt-ids/${id}`, { headers: { 'content-type': 'text/plain' }, body: 'x' });
    assert.equal(res.status, 201, await res.text());
    const get = await fetch(`${srv.url}/bkt-ids/${id}?offset=-1`);
    assert.equal(await get.text(), 'x');
});

test('ext 1.6: reserved subresource names remain valid stream ids', async () => {
    for (const id of ['append-batch', 'attrs', 'bootstrap', 'incarnation', 'retention', 'snapshot']) {
        const res = await put(`/bkt-names/${id}`);
        assert.equal(res.status, 201, `${id}: ${await res.text()}`);
    }
});

test('ext 1.6: a path with three or more segments under a bucket is 404 and creates no stream', async () => {
    const s = uniq();
    assert.equal((await put(`/bkt-seg/${s}`)).status, 201);
    for (const path of [`/bkt-seg/${s}/x`, `/bkt-seg/${s}/x/y`, `/bkt-seg/${s}/x/y/z`, `/bkt-seg/other/x`]) {
        for (const method of ['PUT', 'POST', 'GET', 'DELETE']) {
            const init = { method };
            if (method === 'POST' || method === 'PUT') {
                init.headers = { 'content-type': 'application/octet-stream' };
                init.body = 'data';
            }
            const res = await fetch(srv.url + path, init);
            assert.equal(res.status, 404, `${method} ${path}: ${res.status}`);
            const body = JSON.parse(await res.text());
            assert.match(body.error.code, /^[A-Z_]+$/);
        }
        const h = await head(path);
        assert.equal(h.status, 404);
    }
    // The stream itself was not touched.
    const get = await fetch(`${srv.url}/bkt-seg/${s}?offset=-1`);
    assert.equal(get.status, 200);
    assert.equal((await get.arrayBuffer()).byteLength, 0);
    assert.equal((await head('/bkt-seg/other')).status, 404, 'no stream "other" was created');
});

test('ext 1.6: paths under /__ursula/ are not buckets (404, no stream created)', async () => {
    // "__ursula" itself matches the bucket id pattern, so this checks the routing.
    // (GET /__ursula/metrics is the metrics scrape; its other methods are 404.)
    for (const path of ['/__ursula/anything', '/__ursula/x/y', '/__ursula/config']) {
        const res = await put(path, { headers: { 'content-type': 'text/plain' }, body: 'x' });
        await expectError(res, 404, 'NOT_FOUND');
        await expectError(await fetch(srv.url + path), 404, 'NOT_FOUND');
        await expectError(await fetch(srv.url + path, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' }),
                          404, 'NOT_FOUND');
        assert.equal((await head(path)).status, 404);
    }
});

test('base 6: paths under /v1/stream/__ds are routed before streams (404, not a stream create)', async () => {
    for (const path of ['/v1/stream/__ds', '/v1/stream/__ds/subscriptions/x', '/v1/stream/__ds/x']) {
        const res = await put(path, { headers: { 'content-type': 'text/plain' }, body: 'x' });
        await expectError(res, 404, 'NOT_FOUND');
        await expectError(await fetch(srv.url + path + '?offset=-1'), 404, 'NOT_FOUND');
        assert.equal((await head(path)).status, 404);
    }
    // An id that only starts with the letters is an ordinary stream.
    assert.equal((await put('/v1/stream/__dsx')).status, 201);
});

test('ext 11: an undecodable percent-escape in the path is 400 INVALID_REQUEST', async () => {
    for (const path of ['/bkt-ids/a%zz', '/bkt-ids/a%4', '/v1/stream/a%g0']) {
        await expectError(await put(path), 400, 'INVALID_REQUEST');
    }
});

test('ext 1.2 / 11: the root path and a bucket GET are no stream (404 / 405 with an error body)', async () => {
    await expectError(await fetch(srv.url + '/'), 404, 'NOT_FOUND');
    await expectError(await fetch(srv.url + '/bkt-ids'), 405, 'METHOD_NOT_ALLOWED');
    await expectError(await fetch(srv.url + '/bkt-ids', { method: 'DELETE' }), 405, 'METHOD_NOT_ALLOWED');
});
