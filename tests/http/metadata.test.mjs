// Server metadata (extensions 10) and the stream metadata HEAD carries
// (base protocol 5.5, extensions 2.4).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { onCluster, startServer, suiteDurable } from './lib/server.mjs';
import { uniq, RawConn, rawRequest, openSse } from './lib/http.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

const CLUSTER_ID = /^[A-Za-z0-9._-]{1,64}$/;
const OCTET = { 'content-type': 'application/octet-stream' };

function checkIdentity(headers, what) {
    const get = (n) => (typeof headers.get === 'function' ? headers.get(n) : headers[n]);
    assert.equal(get('ursula-protocol'), '2', `${what}: Ursula-Protocol`);
    const id = get('ursula-cluster-id');
    assert.match(id ?? '', CLUSTER_ID, `${what}: Ursula-Cluster-Id ${id}`);
    return id;
}

test('ext 10: Ursula-Protocol: 2 and Ursula-Cluster-Id on every kind of answer, the id the same on all', async () => {
    const stream = `${srv.url}/bkt-meta/${uniq('m')}`;
    const missing = `${srv.url}/bkt-meta/${uniq('missing')}`;
    const ids = new Set();
    const cases = [
        ['PUT 201', stream, { method: 'PUT', headers: OCTET, body: 'abc' }, 201],
        ['PUT 200', stream, { method: 'PUT', headers: OCTET }, 200],
        ['POST 204', stream, { method: 'POST', headers: OCTET, body: 'd' }, 204],
        ['GET 200', stream + '?offset=-1', {}, 200],
        ['HEAD 200', stream, { method: 'HEAD' }, 200],
        ['long-poll 204', stream + '?offset=now&live=long-poll&timeout_ms=1', {}, 204],
        ['HEAD 404', missing, { method: 'HEAD' }, 404],
        ['GET 404', missing, {}, 404],
        ['POST 404', missing, { method: 'POST', headers: OCTET, body: 'x' }, 404],
        ['route 404', `${srv.url}/__ursula/x`, {}, 404],
        ['subresource 404', `${stream}/x/y`, {}, 404],
        ['GET 400', stream + '?offset=bad', {}, 400],
        ['HEAD 400', `${srv.url}/abc/x`, { method: 'HEAD' }, 400],
        ['PUT 409', stream, { method: 'PUT', headers: { 'content-type': 'text/plain' } }, 409],
        ['POST 409', stream, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'x' }, 409],
        ['GET 416', stream + '?offset=00000000000000009999', {}, 416],
        ['PATCH 405', stream, { method: 'PATCH' }, 405],
        ['OPTIONS 204', stream, { method: 'OPTIONS' }, 204],
        ['bucket PUT 201', `${srv.url}/bkt-meta`, { method: 'PUT' }, 201],
        ['DELETE 204', stream, { method: 'DELETE' }, 204],
    ];
    for (const [what, url, init, status] of cases) {
        const res = await fetch(url, init);
        await res.arrayBuffer();
        assert.equal(res.status, status, what);
        ids.add(checkIdentity(res.headers, what));
    }
    // An SSE answer too.
    const s = `${srv.url}/bkt-meta/${uniq('sse')}`;
    await fetch(s, { method: 'PUT', headers: OCTET, body: 'x' });
    const sse = await openSse(s + '?offset=-1&live=sse');
    ids.add(checkIdentity(sse.res.headers, 'SSE 200'));
    sse.controller.abort();
    assert.equal(ids.size, 1, `one cluster id across answers: ${[...ids]}`);
});

test('ext 10: answers sent before routing (a malformed request) carry the server identity too', async () => {
    const ok = await fetch(`${srv.url}/bkt-meta/${uniq()}`, { method: 'HEAD' });
    const id = ok.headers.get('ursula-cluster-id');
    const conn = await RawConn.open(srv.port, srv.host);
    try {
        await conn.write('GARBAGE\r\n\r\n');
        const res = await conn.readResponse();
        assert.equal(res.status, 400);
        assert.equal(checkIdentity(res.headers, 'early 400'), id);
    } finally {
        conn.destroy();
    }
});

test('ext 10: the cluster id is the same across connections; another deployment has another id', async () => {
    const a = (await fetch(srv.url + '/')).headers.get('ursula-cluster-id');
    const conn = await RawConn.open(srv.port, srv.host);
    let b;
    try {
        await conn.write(rawRequest('GET', '/'));
        b = (await conn.readResponse()).headers['ursula-cluster-id'];
    } finally {
        conn.destroy();
    }
    assert.equal(a, b);
    const other = await startServer();
    try {
        const c = (await fetch(other.url + '/')).headers.get('ursula-cluster-id');
        assert.match(c, CLUSTER_ID);
        assert.notEqual(c, a, 'two deployments must not share a cluster id');
    } finally {
        await other.stop();
    }
});

test('ext 10: a stream HEAD carries Ursula-Max-Request-Bytes: 33554432 (canonical decimal), and Ursula-Max-Snapshot-Bytes only with a cold backend', async () => {
    for (const url of [`${srv.url}/bkt-meta/${uniq()}`, `${srv.url}/v1/stream/${uniq()}`]) {
        await fetch(url, { method: 'PUT', headers: OCTET });
        const head = await fetch(url, { method: 'HEAD' });
        assert.equal(head.status, 200);
        assert.equal(head.headers.get('ursula-max-request-bytes'), '33554432');
        if (suiteDurable || onCluster) {  // a cluster's nodes are durable, on S3
            assert.match(head.headers.get('ursula-max-snapshot-bytes') ?? '', /^[1-9][0-9]*$/, 'a cold backend takes snapshot parts');
        } else {
            assert.equal(head.headers.get('ursula-max-snapshot-bytes'), null, 'no cold backend: no snapshot parts');
        }
    }
});

test('base 5.5 / ext 2.4: a stream HEAD carries Stream-Next-Offset, Stream-Incarnation, Stream-Retained-Offset and Cache-Control: no-store', async () => {
    const url = `${srv.url}/bkt-meta/${uniq()}`;
    const put = await fetch(url, { method: 'PUT', headers: { 'content-type': 'text/plain', 'stream-ttl': '3600' }, body: 'hello' });
    const head = await fetch(url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'text/plain');
    assert.equal(head.headers.get('stream-next-offset'), put.headers.get('stream-next-offset'));
    assert.equal(head.headers.get('stream-incarnation'), put.headers.get('stream-incarnation'));
    assert.match(head.headers.get('stream-incarnation'), /^\d+$/);
    const inc = BigInt(head.headers.get('stream-incarnation'));
    assert.ok(inc >= 2n ** 52n && inc < 2n ** 53n, 'the token lies in [2^52, 2^53)');
    assert.match(head.headers.get('stream-retained-offset'), /^\d{20}$/);
    assert.equal(head.headers.get('stream-ttl'), '3600');
    assert.equal(head.headers.get('cache-control'), 'no-store');
    assert.equal(head.headers.get('stream-closed'), null);
});

test('ext 2.4: Stream-Incarnation changes when a stream is deleted and recreated at the same URL', async () => {
    const url = `${srv.url}/bkt-meta/${uniq()}`;
    const a = (await fetch(url, { method: 'PUT' })).headers.get('stream-incarnation');
    assert.equal((await fetch(url, { method: 'DELETE' })).status, 204);
    const b = (await fetch(url, { method: 'PUT' })).headers.get('stream-incarnation');
    assert.notEqual(a, b);
});

test('base 12.7: browser security headers on answers', async () => {
    const url = `${srv.url}/bkt-meta/${uniq()}`;
    for (const res of [await fetch(url, { method: 'PUT' }), await fetch(url + '?offset=-1'),
                       await fetch(url + '?offset=x')]) {
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
        assert.match(res.headers.get('cross-origin-resource-policy') ?? '', /^(cross-origin|same-site|same-origin)$/);
    }
});
