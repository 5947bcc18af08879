// Cache-Control on both surfaces (extensions 4.3 note; base protocol 10)
// and HEAD's ETag (RFC 9110 9.3.2: the one a GET would send).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq, readSse } from './lib/http.mjs';

const off = (n) => String(n).padStart(20, '0');
let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv.stop(); });

const TEXT = { 'Content-Type': 'text/plain' };

async function noStore(what, res) {
    if (res.body) await res.body.cancel();
    assert.equal(res.headers.get('cache-control'), 'no-store', `${what}: ${res.status} Cache-Control`);
}

test('ext 4.3 note: every answer on the bucketed surface says Cache-Control: no-store, catch-up reads with data included', async () => {
    const url = `${srv.url}/cache-test/${uniq()}`;
    await noStore('bucket create', await fetch(`${srv.url}/cache-test`, { method: 'PUT' }));
    await noStore('create', await fetch(url, { method: 'PUT', headers: TEXT, body: 'hello ' }));
    await noStore('append', await fetch(url, { method: 'POST', headers: TEXT, body: 'world' }));
    await noStore('read from -1', await fetch(`${url}?offset=-1`));
    await noStore('read from an offset', await fetch(`${url}?offset=${off(2)}`));
    await noStore('read with max_bytes', await fetch(`${url}?offset=-1&max_bytes=3`));
    await noStore('read at now', await fetch(`${url}?offset=now`));
    await noStore('HEAD', await fetch(url, { method: 'HEAD' }));
    await noStore('long-poll timeout', await fetch(`${url}?offset=${off(11)}&live=long-poll&timeout_ms=1`));
    await noStore('long-poll with data', await fetch(`${url}?offset=${off(0)}&live=long-poll`));
    const sse = new AbortController();
    const live = await fetch(`${url}?offset=-1&live=sse`, { signal: sse.signal });
    assert.equal(live.headers.get('cache-control'), 'no-store', 'SSE');
    await readSse(live, { done: (events) => events.some((e) => e.event === 'control'), controller: sse });
    await noStore('publish', await fetch(`${url}/snapshot/${off(11)}`, { method: 'PUT', body: 'state' }));
    await noStore('snapshot read', await fetch(`${url}/snapshot/${off(11)}`));
    await noStore('bootstrap', await fetch(`${url}/bootstrap`));
    const head = await fetch(url, { method: 'HEAD' });
    const token = head.headers.get('stream-incarnation');
    await noStore('chunk', await fetch(`${url}/incarnation/${token}/chunk/${off(0)}`));
    await noStore('404', await fetch(`${srv.url}/cache-test/${uniq('missing')}?offset=-1`));
    await noStore('400', await fetch(`${url}?offset=xyz`));
    await noStore('close', await fetch(url, { method: 'POST', headers: { 'Stream-Closed': 'true' } }));
    await noStore('closed read', await fetch(`${url}?offset=-1`));
    await noStore('delete', await fetch(url, { method: 'DELETE' }));
});

test('base protocol 10: /v1/stream catch-up reads with data keep the base protocol\'s caching; empty and now reads say no-store', async () => {
    const url = `${srv.url}/v1/stream/${uniq('cache')}`;
    assert.equal((await fetch(url, { method: 'PUT', headers: TEXT, body: 'hello' })).status, 201);
    const read = await fetch(`${url}?offset=-1`);
    assert.equal(await read.text(), 'hello');
    assert.equal(read.headers.get('cache-control'), 'public, max-age=60, stale-while-revalidate=300');
    const empty = await fetch(`${url}?offset=${off(5)}`);
    await empty.arrayBuffer();
    assert.equal(empty.headers.get('cache-control'), 'no-store');
    const now = await fetch(`${url}?offset=now`);
    await now.arrayBuffer();
    assert.equal(now.headers.get('cache-control'), 'no-store');
});

// The ETag of the GET without an offset that HEAD stands for.
async function getEtag(url, query = '?offset=-1') {
    const res = await fetch(url + query);
    await res.arrayBuffer();
    assert.equal(res.status, 200);
    return res.headers.get('etag');
}
async function headEtag(url) {
    const res = await fetch(url, { method: 'HEAD' });
    assert.equal(res.status, 200);
    return res.headers.get('etag');
}

for (const surface of ['bucketed', 'v1']) {
    test(`RFC 9110 9.3.2: HEAD sends the ETag a GET from the start would, as the stream grows and closes (${surface})`, async () => {
        const url = surface === 'v1' ? `${srv.url}/v1/stream/${uniq('etag')}` : `${srv.url}/cache-test/${uniq('etag')}`;
        assert.equal((await fetch(url, { method: 'PUT', headers: TEXT })).status, 201);
        const empty = await headEtag(url);
        assert.ok(empty, 'HEAD of an empty stream has an ETag');
        assert.equal(empty, await getEtag(url));
        assert.equal((await fetch(url, { method: 'POST', headers: TEXT, body: 'abc' })).status, 204);
        const grown = await headEtag(url);
        assert.notEqual(grown, empty);
        assert.equal(grown, await getEtag(url));
        assert.equal((await fetch(url, { method: 'POST', headers: { 'Stream-Closed': 'true' } })).status, 204);
        const closed = await headEtag(url);
        assert.notEqual(closed, grown, 'closure changes the tag (base protocol 10.1)');
        assert.equal(closed, await getEtag(url));
        // The tag revalidates the GET it stands for.
        const revalidated = await fetch(`${url}?offset=-1`, { headers: { 'If-None-Match': closed } });
        assert.equal(revalidated.status, 304);
    });
}

test('RFC 9110 9.3.2: after retention, HEAD\'s ETag is the GET\'s from the first retained offset', async () => {
    const url = `${srv.url}/cache-test/${uniq('retained')}`;
    assert.equal((await fetch(url, { method: 'PUT', headers: TEXT, body: 'abcdef' })).status, 201);
    assert.equal((await fetch(`${url}/snapshot/${off(3)}`, { method: 'PUT', body: 's' })).status, 204);
    assert.equal((await fetch(`${url}/retention/${off(3)}`, { method: 'PUT' })).status, 204);
    assert.equal(await headEtag(url), await getEtag(url, `?offset=${off(3)}`));
});
