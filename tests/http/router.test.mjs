// The router: path segments split before they are decoded (RFC 3986 2.2),
// segments that are not UTF-8 refused before any route (extensions 8,
// immutable-reads' 400 row), unknown subresources (extensions 1.6), the
// earlier query form (immutable-reads), 405 with Allow (RFC 9110 15.5.6) and
// the Host rule (RFC 9112 3.2).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq, expectError, RawConn, rawRequest } from './lib/http.mjs';

const off = (n) => String(n).padStart(20, '0');
const BUCKET = 'router-test';
let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv.stop(); });

async function create(body = 'hello', type = 'text/plain') {
    const url = `${srv.url}/${BUCKET}/${uniq()}`;
    const res = await fetch(url, { method: 'PUT', headers: { 'Content-Type': type }, body });
    assert.equal(res.status, 201, await res.text());
    return { url, token: res.headers.get('stream-incarnation') };
}

// Sends one raw request on a fresh connection: fetch would normalise some
// targets and never sends two Host lines.
async function raw(bytes) {
    const conn = await RawConn.open(srv.port, srv.host);
    try {
        await conn.write(bytes);
        const res = await conn.readResponse();
        res.json = () => JSON.parse(res.body.toString('utf8'));
        return res;
    } finally {
        conn.destroy();
    }
}

const NOT_UTF8 = {
    'two bytes that lead nothing': '%FF%FE',
    'an overlong /': '%C0%AF',
    'an encoded surrogate': '%ED%A0%80',
    'a truncated sequence': '%E2%82',
    'a lone continuation byte': '%80',
    'a code point past U+10FFFF': '%F4%90%80%80',
};

for (const [what, escaped] of Object.entries(NOT_UTF8)) {
    test(`ext 8: a stream id that is not UTF-8 once decoded (${what}) is refused before the route, and nothing is created`, async () => {
        const url = `${srv.url}/${BUCKET}/${escaped}`;
        await expectError(await fetch(url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' } }),
                          400, 'INVALID_REQUEST');
        await expectError(await fetch(url), 400, 'INVALID_REQUEST');
        await expectError(await fetch(`${srv.url}/v1/stream/x${escaped}`, { method: 'PUT' }), 400, 'INVALID_REQUEST');
    });
}

test('ext 8: every segment is checked: bucket, snapshot offset, immutable token and offset', async () => {
    const s = await create();
    for (const escaped of Object.values(NOT_UTF8)) {
        await expectError(await fetch(`${srv.url}/${escaped}/stream`, { method: 'PUT' }), 400, 'INVALID_REQUEST');
        await expectError(await fetch(`${s.url}/snapshot/${escaped}`), 400, 'INVALID_REQUEST');
        await expectError(await fetch(`${s.url}/snapshot/${escaped}`, { method: 'PUT', body: 'x' }),
                          400, 'INVALID_REQUEST');
        await expectError(await fetch(`${s.url}/incarnation/${escaped}/chunk/${off(0)}`), 400, 'INVALID_REQUEST');
        await expectError(await fetch(`${s.url}/incarnation/${s.token}/chunk/${escaped}`), 400, 'INVALID_REQUEST');
        await expectError(await fetch(`${s.url}/retention/${escaped}`, { method: 'PUT' }), 400, 'INVALID_REQUEST');
    }
    // The stream is untouched by all of that.
    const read = await fetch(`${s.url}?offset=-1`);
    assert.equal(await read.text(), 'hello');
});

test('ext 1.1: a well-formed multi-byte stream id is a stream like any other', async () => {
    const url = `${srv.url}/${BUCKET}/${encodeURIComponent(`été-😀-${uniq()}`)}`;
    const put = await fetch(url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' }, body: 'ok' });
    assert.equal(put.status, 201);
    assert.equal(await (await fetch(`${url}?offset=-1`)).text(), 'ok');
});

test('RFC 3986 2.2: an escaped / is data inside its segment: snapshot%2F{offset} is no snapshot', async () => {
    const s = await create('abc');
    const put = await fetch(`${s.url}/snapshot/${off(3)}`, { method: 'PUT', body: 'state' });
    assert.equal(put.status, 204, await put.text());
    assert.equal((await fetch(`${s.url}/snapshot/${off(3)}`)).status, 200);
    await expectError(await fetch(`${s.url}/snapshot%2F${off(3)}`), 404, 'NOT_FOUND');
    await expectError(await fetch(`${s.url}/snapshot%2f${off(3)}`, { method: 'PUT', body: 'x' }), 404, 'NOT_FOUND');
});

test('RFC 3986 2.2: a publish or retention at an offset holding %2F is a malformed offset (400), not another path', async () => {
    const s = await create('abc');
    const at = `0000000000%2F000000003`;
    await expectError(await fetch(`${s.url}/snapshot/${at}`, { method: 'PUT', body: 'x' }), 400, 'INVALID_OFFSET');
    await expectError(await fetch(`${s.url}/snapshot/${at}`), 400, 'INVALID_OFFSET');
    await expectError(await fetch(`${s.url}/retention/${at}`, { method: 'PUT' }), 400, 'INVALID_OFFSET');
    await expectError(await fetch(`${s.url}/snapshot/${at}/parts`, { method: 'POST', body: 'x' }), 400, 'INVALID_OFFSET');
    // An escaped / in an immutable resource's offset or token is a malformed one.
    await expectError(await fetch(`${s.url}/incarnation/${s.token}/chunk/${at}`), 400, 'INVALID_RESOURCE');
    await expectError(await fetch(`${s.url}/incarnation/4503599%2F627370496/chunk/${off(0)}`), 400, 'INVALID_RESOURCE');
    // ...and one between the segments of the resource names no resource at all.
    await expectError(await fetch(`${s.url}/incarnation/${s.token}%2Fchunk/${off(0)}`), 404, 'NOT_FOUND');
});

test('ext 1.6 / 4.1: a path under incarnation/ that is neither resource answers 404; a malformed token or offset inside one 400 INVALID_RESOURCE', async () => {
    const s = await create('abc');
    for (const rest of ['incarnation', `incarnation/${s.token}`, `incarnation/${s.token}/chunk`,
                        `incarnation/${s.token}/chunk/${off(0)}/more`, `incarnation/${s.token}/blob/${off(0)}`,
                        `incarnation/${s.token}/tail/${off(0)}`, `incarnation/x/y/z/w`]) {
        await expectError(await fetch(`${s.url}/${rest}`), 404, 'NOT_FOUND');
    }
    await expectError(await fetch(`${s.url}/incarnation/12/chunk/${off(0)}`), 400, 'INVALID_RESOURCE');
    await expectError(await fetch(`${s.url}/incarnation/${s.token}/chunk/5`), 400, 'INVALID_RESOURCE');
    await expectError(await fetch(`${s.url}/incarnation/${s.token}/snapshot/-1`), 400, 'INVALID_RESOURCE');
});

test('ext 4.1: an immutable resource with a query answers 400 QUERY_NOT_ACCEPTED, even an empty or malformed one', async () => {
    const s = await create('abc');
    const chunk = `${s.url}/incarnation/${s.token}/chunk/${off(0)}`;
    await expectError(await fetch(`${chunk}?x=1`), 400, 'QUERY_NOT_ACCEPTED');
    await expectError(await fetch(`${chunk}?offset=-1`, { method: 'HEAD' }), 400, 'QUERY_NOT_ACCEPTED', { head: true });
    await expectError(await fetch(`${s.url}/incarnation/${s.token}/snapshot/${off(0)}?a`), 400, 'QUERY_NOT_ACCEPTED');
    const empty = await raw(rawRequest('GET', `/${s.url.split('/').slice(3).join('/')}/incarnation/${s.token}/chunk/${off(0)}?`));
    assert.equal(empty.status, 400);
    assert.equal(empty.json().error.code, 'QUERY_NOT_ACCEPTED');
    const malformed = await raw(rawRequest('GET', `/${s.url.split('/').slice(3).join('/')}/incarnation/${s.token}/chunk/${off(0)}?%zz`));
    assert.equal(malformed.json().error.code, 'QUERY_NOT_ACCEPTED');
    // Without one, the same chunk is served.
    assert.equal(await (await fetch(chunk)).text(), 'abc');
});

test('immutable-reads: the earlier query form (incarnation, aligned) answers 400 UNSUPPORTED on the stream and snapshot routes', async () => {
    const s = await create('abc');
    await fetch(`${s.url}/snapshot/${off(3)}`, { method: 'PUT', body: 'state' });
    const cases = [
        [`${s.url}?offset=-1&incarnation=${s.token}`, {}],
        [`${s.url}?offset=-1&aligned=true`, {}],
        [`${s.url}?incarnation=${s.token}`, { method: 'HEAD' }],
        [`${s.url}?incarnation=${s.token}`, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'def' }],
        [`${s.url}/snapshot/${off(3)}?incarnation=${s.token}`, {}],
        [`${s.url}/snapshot/${off(3)}?aligned=1`, { method: 'HEAD' }],
    ];
    for (const [url, init] of cases) {
        const res = await fetch(url, init);
        const body = await expectError(res, 400, 'UNSUPPORTED', { head: init.method === 'HEAD' });
        if (body) assert.match(body.error.message, /incarnation\/\{token\}/, 'the message names the path form');
    }
    // Nothing of the refused append applied.
    assert.equal(await (await fetch(`${s.url}?offset=-1`)).text(), 'abc');
});

test('immutable-reads: a producer write with the earlier query form is refused before any early answer', async () => {
    const s = await create('', 'text/plain');
    const producer = { 'Producer-Id': 'p', 'Producer-Epoch': '0', 'Producer-Seq': '0', 'Content-Type': 'text/plain',
                       'Stream-Incarnation': s.token };
    const first = await fetch(s.url, { method: 'POST', headers: producer, body: 'a' });
    assert.equal(first.status, 200);
    const path = s.url.split('/').slice(3).join('/');
    const conn = await RawConn.open(srv.leaderPort, srv.leaderHost);
    try {
        await conn.write(rawRequest('POST', `/${path}?incarnation=${s.token}`, {
            headers: { ...producer, 'Content-Length': '1', Expect: '100-continue' } }));
        let res = await conn.readResponse();
        if (res.status === 100) {
            await conn.write('a');
            res = await conn.readResponse();
        }
        assert.equal(res.status, 400, 'not the early 204 of a repeat');
        assert.equal(JSON.parse(res.body.toString()).error.code, 'UNSUPPORTED');
    } finally {
        conn.destroy();
    }
});

test('RFC 9110 15.5.6: a 405 carries Allow naming the resource\'s methods', async () => {
    const s = await create('abc');
    const cases = [
        [s.url, 'PATCH', ['GET', 'HEAD', 'PUT', 'POST', 'DELETE']],
        [`${srv.url}/${BUCKET}`, 'GET', ['PUT']],
        [`${s.url}/snapshot/${off(0)}`, 'POST', ['GET', 'HEAD', 'PUT']],
        [`${s.url}/retention/${off(0)}`, 'GET', ['PUT']],
        [`${s.url}/bootstrap`, 'POST', ['GET']],
        [`${s.url}/snapshot/parts`, 'GET', ['DELETE']],
        [`${s.url}/snapshot/${off(0)}/parts`, 'GET', ['POST']],
        [`${s.url}/incarnation/${s.token}/chunk/${off(0)}`, 'PUT', ['GET', 'HEAD']],
    ];
    for (const [url, method, expected] of cases) {
        const res = await fetch(url, { method, body: method === 'GET' ? undefined : 'x' });
        await expectError(res, 405, 'METHOD_NOT_ALLOWED');
        const allow = (res.headers.get('allow') ?? '').split(',').map((m) => m.trim()).filter(Boolean);
        for (const m of expected) assert.ok(allow.includes(m), `${method} ${url}: Allow ${allow} names ${m}`);
        assert.ok(!allow.includes(method), `${method} ${url}: Allow ${allow} does not name ${method}`);
    }
});

test('RFC 9112 3.2: a request with two Host lines answers 400, and one without Host too', async () => {
    const s = await create('abc');
    const path = '/' + s.url.split('/').slice(3).join('/');
    const two = await raw(Buffer.from(`GET ${path}?offset=-1 HTTP/1.1\r\nHost: a\r\nHost: b\r\n\r\n`, 'latin1'));
    assert.equal(two.status, 400);
    assert.equal(two.json().error.code, 'INVALID_REQUEST');
    const put = await raw(Buffer.from(`POST ${path} HTTP/1.1\r\nHost: a\r\nHost: a\r\nContent-Type: text/plain\r\nContent-Length: 1\r\n\r\nX`, 'latin1'));
    assert.equal(put.status, 400, 'even two equal Host lines');
    const none = await raw(Buffer.from(`GET ${path}?offset=-1 HTTP/1.1\r\n\r\n`, 'latin1'));
    assert.equal(none.status, 400);
    const one = await raw(Buffer.from(`GET ${path}?offset=-1 HTTP/1.1\r\nHost: a\r\n\r\n`, 'latin1'));
    assert.equal(one.status, 200);
    assert.equal(one.body.toString(), 'abc', 'the refused append applied nothing');
});
