// CORS for browser clients (base protocol 12.7 and the protocol's headers).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq } from './lib/http.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

const ORIGIN = 'https://app.example';

// Request headers a browser client of the protocol sends (base 5.1-5.8,
// ext 2.4), which a preflight must allow.
const REQUEST_HEADERS = [
    'Content-Type', 'Stream-Seq', 'Stream-TTL', 'Stream-Expires-At', 'Stream-Closed',
    'Producer-Id', 'Producer-Epoch', 'Producer-Seq', 'Stream-Incarnation', 'If-None-Match',
];
// Response headers a browser client must be able to read.
const EXPOSED = [
    'Stream-Next-Offset', 'Stream-Cursor', 'Stream-Up-To-Date', 'Stream-Closed', 'Stream-TTL',
    'Stream-Expires-At', 'Stream-Incarnation', 'Stream-Retained-Offset', 'Stream-Last-Seq',
    'Stream-SSE-Data-Encoding', 'Stream-Data-Content-Type', 'Producer-Epoch', 'Producer-Seq',
    'Producer-Expected-Seq', 'Producer-Received-Seq', 'Ursula-Protocol', 'Ursula-Cluster-Id',
    'Ursula-Max-Request-Bytes', 'ETag', 'Location',
];

const list = (v) => (v ?? '').split(',').map((s) => s.trim().toLowerCase()).filter(Boolean);

function checkAllowOrigin(res) {
    const allow = res.headers.get('access-control-allow-origin');
    assert.ok(allow === '*' || allow === ORIGIN, `Access-Control-Allow-Origin: ${allow}`);
}

test('base 12.7 / Fetch CORS: an OPTIONS preflight allows the protocol methods and request headers', async () => {
    const url = `${srv.url}/bkt-cors/${uniq()}`;
    await fetch(url, { method: 'PUT' });
    for (const method of ['GET', 'HEAD', 'PUT', 'POST', 'DELETE']) {
        const res = await fetch(url, {
            method: 'OPTIONS',
            headers: {
                origin: ORIGIN,
                'access-control-request-method': method,
                'access-control-request-headers': REQUEST_HEADERS.join(',').toLowerCase(),
            },
        });
        assert.ok(res.status === 200 || res.status === 204, `preflight status ${res.status}`);
        checkAllowOrigin(res);
        const methods = list(res.headers.get('access-control-allow-methods'));
        assert.ok(methods.includes(method.toLowerCase()) || methods.includes('*'), `methods: ${methods}`);
        const allowed = list(res.headers.get('access-control-allow-headers'));
        for (const h of REQUEST_HEADERS) {
            assert.ok(allowed.includes(h.toLowerCase()) || allowed.includes('*'), `${h} not allowed: ${allowed}`);
        }
        assert.equal((await res.arrayBuffer()).byteLength, 0);
    }
});

test('base 12.7 / Fetch CORS: a preflight does not need the stream to exist, on both surfaces and for a bucket', async () => {
    for (const path of [`/bkt-cors/${uniq('missing')}`, `/v1/stream/${uniq('missing')}`, '/bkt-cors']) {
        const res = await fetch(srv.url + path, {
            method: 'OPTIONS',
            headers: { origin: ORIGIN, 'access-control-request-method': 'PUT' },
        });
        assert.ok(res.status === 200 || res.status === 204, `${path}: ${res.status}`);
        checkAllowOrigin(res);
    }
    // The preflight created nothing.
    const head = await fetch(`${srv.url}/bkt-cors/${uniq('missing')}`, { method: 'HEAD' });
    assert.equal(head.status, 404);
});

test('base 12.7 / Fetch CORS: Access-Control-Expose-Headers lists Stream-Next-Offset and the other protocol headers on every answer', async () => {
    const url = `${srv.url}/bkt-cors/${uniq()}`;
    const answers = [
        await fetch(url, { method: 'PUT', headers: { origin: ORIGIN, 'content-type': 'text/plain' }, body: 'a' }),
        await fetch(url, { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'text/plain' }, body: 'b' }),
        await fetch(url + '?offset=-1', { headers: { origin: ORIGIN } }),
        await fetch(url, { method: 'HEAD', headers: { origin: ORIGIN } }),
        await fetch(url + '?offset=now&live=long-poll&timeout_ms=1', { headers: { origin: ORIGIN } }),
        await fetch(url + '?offset=bad', { headers: { origin: ORIGIN } }),
        await fetch(`${srv.url}/bkt-cors/${uniq('missing')}`, { headers: { origin: ORIGIN } }),
        await fetch(url, { method: 'POST', headers: { origin: ORIGIN, 'content-type': 'text/html' }, body: 'c' }),
    ];
    for (const res of answers) {
        await res.arrayBuffer();
        checkAllowOrigin(res);
        const exposed = list(res.headers.get('access-control-expose-headers'));
        for (const h of EXPOSED) {
            assert.ok(exposed.includes(h.toLowerCase()) || exposed.includes('*'),
                      `${res.status}: ${h} is not exposed (${exposed})`);
        }
    }
});

test('base 12.7 / Fetch CORS: an SSE answer is readable cross-origin', async () => {
    const url = `${srv.url}/bkt-cors/${uniq()}`;
    await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' }, body: 'x' });
    const controller = new AbortController();
    const res = await fetch(url + '?offset=-1&live=sse', { headers: { origin: ORIGIN }, signal: controller.signal });
    assert.equal(res.status, 200);
    checkAllowOrigin(res);
    assert.ok(list(res.headers.get('access-control-expose-headers')).includes('stream-sse-data-encoding'));
    controller.abort();
});

test('base 12.7 / Fetch CORS: a write without Origin (a server-side writer) is answered without the CORS fields; reads keep them', async () => {
    const url = `${srv.url}/bkt-cors/${uniq()}`;
    const writes = [
        await fetch(url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'a' }),
        await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'b' }),
        await fetch(url, { method: 'POST', headers: { 'content-type': 'text/html' }, body: 'c' }),
    ];
    for (const res of writes) {
        await res.arrayBuffer();
        assert.equal(res.headers.get('access-control-allow-origin'), null, `${res.status}`);
        assert.equal(res.headers.get('access-control-expose-headers'), null, `${res.status}`);
        // The browser security headers stay on every answer (base 12.7).
        assert.equal(res.headers.get('x-content-type-options'), 'nosniff');
        assert.equal(res.headers.get('cross-origin-resource-policy'), 'cross-origin');
    }
    // A GET or HEAD answer may be kept by a shared cache and given to a
    // browser later: it carries them whoever asked.
    for (const res of [await fetch(url + '?offset=-1'), await fetch(url, { method: 'HEAD' })]) {
        await res.arrayBuffer();
        checkAllowOrigin(res);
        assert.ok(list(res.headers.get('access-control-expose-headers')).includes('stream-next-offset'));
    }
    const del = await fetch(url, { method: 'DELETE' });
    assert.equal(del.headers.get('access-control-allow-origin'), null);
    const delFromPage = await fetch(`${srv.url}/bkt-cors/${uniq()}`, { method: 'DELETE', headers: { origin: ORIGIN } });
    checkAllowOrigin(delFromPage);
});
