// Both URL surfaces and the JSON Message Text rule (extensions "JSON Message
// Text", 9.4; base protocol 9.1).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq, offsetNum, utf8len, expectError, snapshot } from './lib/http.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

const JSON_CT = { 'content-type': 'application/json' };
const bucketUrl = (name = uniq('j')) => `${srv.url}/bkt-surf/${name}`;
const v1Url = (name = uniq('j')) => `${srv.url}/v1/stream/${name}`;

// A body exercising everything the storage rule keeps or strips.
const BODY = '[ {"b": 1, "a": 2, "a": 3},\n\t1.50e3 , 1e400,\r\n "\\ud800 lone", "  keep  spaces  ",' +
             ' {"n": [ 1 , -0.0E-5 , {"z": null, "y": true} ] } ]';
const STORED = [
    '{"b":1,"a":2,"a":3}',
    '1.50e3',
    '1e400',
    '"\\ud800 lone"',
    '"  keep  spaces  "',
    '{"n":[1,-0.0E-5,{"z":null,"y":true}]}',
];
const NDJSON = STORED.map((m) => m + '\n').join('');

async function create(url, body, headers = JSON_CT) {
    const res = await fetch(url, { method: 'PUT', headers, body });
    assert.equal(res.status, 201, await res.text());
    return res;
}

test('base 5.1: a 201 Created names the stream in Location, as requested, on both surfaces', async () => {
    for (const path of ['/bkt-surf/' + uniq('loc') + '%20x', '/v1/stream/' + uniq('loc') + '%20x']) {
        const res = await create(srv.url + path, 'abc', { 'content-type': 'text/plain' });
        // The host the create reached: srv.url's, or a cluster's leader after a redirect.
        const host = new URL(res.url).host;
        assert.equal(res.headers.get('location'), `http://${host}${path}`);
    }
});

test('ext 1 / base 5.1: PUT creates a stream on both /{bucket}/{stream} and /v1/stream/{id}', async () => {
    for (const url of [bucketUrl(), v1Url()]) {
        const res = await create(url, 'abc', { 'content-type': 'text/plain' });
        assert.equal(res.headers.get('stream-next-offset') !== null, true);
        const head = await fetch(url, { method: 'HEAD' });
        assert.equal(head.status, 200);
        assert.equal(head.headers.get('content-type'), 'text/plain');
        const post = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'def' });
        assert.equal(post.status, 204);
        const get = await fetch(url + '?offset=-1');
        assert.equal(get.status, 200);
        assert.equal(await get.text(), 'abcdef');
        const del = await fetch(url, { method: 'DELETE' });
        assert.equal(del.status, 204);
        const gone = await fetch(url, { method: 'HEAD' });
        assert.equal(gone.status, 404);
    }
});

test('ext 1: the two surfaces are separate namespaces of one engine (same id, independent streams)', async () => {
    const name = uniq('same');
    await create(`${srv.url}/v1/stream/${name}`, 'v1', { 'content-type': 'text/plain' });
    const b = await fetch(`${srv.url}/bkt-surf/${name}`, { method: 'HEAD' });
    assert.equal(b.status, 404, 'a /v1/stream stream is not visible under a bucket');
    await create(`${srv.url}/bkt-surf/${name}`, 'bucketed', { 'content-type': 'text/plain' });
    assert.equal(await (await fetch(`${srv.url}/v1/stream/${name}?offset=-1`)).text(), 'v1');
    assert.equal(await (await fetch(`${srv.url}/bkt-surf/${name}?offset=-1`)).text(), 'bucketed');
});

test('ext 9.4: a JSON stream read on the bucketed surface is NDJSON, each stored message followed by LF', async () => {
    const url = bucketUrl();
    await create(url, BODY);
    const res = await fetch(url + '?offset=-1');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
    const text = await res.text();
    assert.equal(text, NDJSON);
    assert.ok(text.endsWith('\n'));
    assert.equal(res.headers.get('stream-up-to-date'), 'true');
});

test('ext 9.4: HEAD of a bucketed JSON stream reports the configured type application/json', async () => {
    const url = bucketUrl();
    await create(url, BODY);
    const head = await fetch(url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'application/json');
});

test('base 9.1.5: a JSON stream read on /v1/stream is a JSON array with Content-Type application/json', async () => {
    const url = v1Url();
    await create(url, BODY);
    const res = await fetch(url + '?offset=-1');
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json');
    const text = await res.text();
    assert.equal(text, '[' + STORED.join(',') + ']');
    // It parses as an array of the messages (1e400 parses to Infinity in JS).
    const parsed = JSON.parse(text);
    assert.equal(parsed.length, STORED.length);
});

test('JSON Message Text: member order, duplicate members, number text and lone surrogates are kept; whitespace is stripped', async () => {
    const url = bucketUrl();
    await create(url, '[]');
    const bodies = [
        ['{ "z" : 1 , "a" : 2 }', '{"z":1,"a":2}'],
        ['{"k":1,"k":2,"k":1}', '{"k":1,"k":2,"k":1}'],
        ['1.50e3', '1.50e3'],
        ['1e400', '1e400'],
        ['-1E-400', '-1E-400'],
        ['123456789012345678901234567890', '123456789012345678901234567890'],
        ['"\\udc00"', '"\\udc00"'],
        ['"\\ud83d\\ude00 \\u00e9 é 😀"', '"\\ud83d\\ude00 \\u00e9 é 😀"'],
        ['"tab\\tstays \\/ escaped"', '"tab\\tstays \\/ escaped"'],
        [' \r\n\t[ 1 ,\n2 ]\t ', null], // a top-level array body: flattened
        ['[[ 1 , 2 ], [3]]', null],
    ];
    let expected = '';
    for (const [body, stored] of bodies) {
        const res = await fetch(url, { method: 'POST', headers: JSON_CT, body });
        assert.equal(res.status, 204, `${body}: ${await res.text()}`);
        if (stored !== null) expected += stored + '\n';
    }
    expected += '1\n2\n[1,2]\n[3]\n';
    const text = await (await fetch(url + '?offset=-1')).text();
    assert.equal(text, expected);
});

test('base 9.1.2: one level of a top-level array is flattened ([[[1,2,3]]] stores [[1,2,3]])', async () => {
    const url = bucketUrl();
    await create(url, '[[[1, 2, 3]]]');
    assert.equal(await (await fetch(url + '?offset=-1')).text(), '[[1,2,3]]\n');
});

test('ext JSON Message Text: offsets count stored bytes (Stream-Next-Offset equals the NDJSON byte length)', async () => {
    for (const url of [bucketUrl(), v1Url()]) {
        const put = await create(url, BODY);
        const start = offsetNum((await fetch(url, { method: 'HEAD' })).headers.get('stream-retained-offset') ??
                                '00000000000000000000');
        assert.equal(offsetNum(put.headers.get('stream-next-offset')) - start, utf8len(NDJSON));
        const msg = '{ "é" : "😀" }';
        const post = await fetch(url, { method: 'POST', headers: JSON_CT, body: msg });
        assert.equal(post.status, 204);
        const tail = offsetNum(post.headers.get('stream-next-offset'));
        assert.equal(tail - start, utf8len(NDJSON) + utf8len('{"é":"😀"}\n'));
        const head = await fetch(url, { method: 'HEAD' });
        assert.equal(offsetNum(head.headers.get('stream-next-offset')), tail);
        const get = await fetch(url + '?offset=-1');
        assert.equal(offsetNum(get.headers.get('stream-next-offset')), tail);
    }
});

test('ext JSON Message Text: a read from a message boundary returns the messages after it, on both surfaces', async () => {
    const name = uniq('bound');
    const b = `${srv.url}/bkt-surf/${name}`;
    const v = `${srv.url}/v1/stream/${name}`;
    for (const url of [b, v]) {
        const first = await create(url, '{"m":1}');
        await fetch(url, { method: 'POST', headers: JSON_CT, body: '[{"m":2},{"m":3}]' });
        const from = first.headers.get('stream-next-offset');
        const res = await fetch(`${url}?offset=${from}`);
        const text = await res.text();
        assert.equal(text, url === b ? '{"m":2}\n{"m":3}\n' : '[{"m":2},{"m":3}]');
    }
});

test('base 8 / 9.1.5: offset=now on a JSON stream answers [] on /v1/stream and an empty body on the bucketed surface', async () => {
    const b = bucketUrl();
    const v = v1Url();
    await create(b, '{"a":1}');
    await create(v, '{"a":1}');
    const rb = await fetch(b + '?offset=now');
    assert.equal(rb.status, 200);
    assert.equal(await rb.text(), '');
    const rv = await fetch(v + '?offset=now');
    assert.equal(rv.status, 200);
    assert.equal(await rv.text(), '[]');
    assert.equal(rv.headers.get('stream-up-to-date'), 'true');
});

test('base 9.1.5: a /v1/stream JSON read shortened by max_bytes still ends on a message boundary (valid array)', async () => {
    const url = v1Url();
    await create(url, '[{"m":"aaaaaaaa"},{"m":"bbbbbbbb"},{"m":"cccccccc"}]');
    const res = await fetch(url + '?offset=-1&max_bytes=20');
    const text = await res.text();
    const parsed = JSON.parse(text);
    assert.ok(parsed.length >= 1 && parsed.length < 3, text);
    assert.equal(res.headers.get('stream-up-to-date'), null);
    const rest = await fetch(`${url}?offset=${res.headers.get('stream-next-offset')}`);
    const all = parsed.concat(JSON.parse(await rest.text()));
    assert.deepEqual(all.map((m) => m.m), ['aaaaaaaa', 'bbbbbbbb', 'cccccccc']);
});

test('ext 9.4: a bucketed JSON read shortened by max_bytes may end inside a message; reads resume from Stream-Next-Offset', async () => {
    const url = bucketUrl();
    await create(url, '[{"m":"aaaaaaaa"},{"m":"bbbbbbbb"}]');
    let offset = '-1';
    let text = '';
    for (let i = 0; i < 20; i++) {
        const res = await fetch(`${url}?offset=${offset}&max_bytes=7`);
        const chunk = await res.text();
        assert.ok(utf8len(chunk) <= 7);
        text += chunk;
        offset = res.headers.get('stream-next-offset');
        if (res.headers.get('stream-up-to-date') === 'true') break;
    }
    assert.equal(text, '{"m":"aaaaaaaa"}\n{"m":"bbbbbbbb"}\n');
});

test('JSON Message Text: invalid JSON, invalid UTF-8 and depth over 127 are refused with 400, nothing committed', async () => {
    const url = bucketUrl();
    await create(url, '{"keep":1}');
    const before = await snapshot(url);
    const deep = (n) => '['.repeat(n) + ']'.repeat(n);
    const obj = (inner) => '{"a":' + inner + '}';
    const bad = [
        '{"a":1',
        '{"a":1}{"b":2}',
        '[{"a":1},]',
        '01',
        "{'a':1}",
        'NaN',
        '"\\x41"',
        '"\\ud80"',
        Buffer.from([0x22, 0xc3, 0x28, 0x22]),        // invalid UTF-8 in a string
        Buffer.from([0x22, 0xed, 0xa0, 0x80, 0x22]),  // an encoded surrogate
        obj(deep(127)),                               // a bare message of depth 128
        '[' + obj(deep(127)) + ']',                   // depth 128 inside a body array
        deep(129),                                    // flattened: messages of depth 128
        '[{"ok":1}, {"bad":]',                        // the first message is fine, the body is not
    ];
    for (const body of bad) {
        const res = await fetch(url, { method: 'POST', headers: JSON_CT, body });
        await expectError(res, 400, 'INVALID_REQUEST');
    }
    assert.deepEqual(await snapshot(url), before);
    // Depth 127 is fine, bare or inside a body array (one level deeper).
    for (const body of [obj(deep(126)), '[' + obj(deep(126)) + ']', deep(128)]) {
        const res = await fetch(url, { method: 'POST', headers: JSON_CT, body });
        assert.equal(res.status, 204, await res.text());
    }
});

test('base 9.1.3: an empty array appended is refused (400 EMPTY_APPEND); an empty array create makes an empty stream', async () => {
    const url = bucketUrl();
    const put = await create(url, '[ ]');
    assert.equal(offsetNum(put.headers.get('stream-next-offset')), 0);
    const res = await fetch(url, { method: 'POST', headers: JSON_CT, body: '[]' });
    await expectError(res, 400, 'EMPTY_APPEND');
    assert.equal(await (await fetch(url + '?offset=-1')).text(), '');
});

test('JSON Message Text: a JSON create body with invalid JSON is refused and creates nothing', async () => {
    const url = bucketUrl();
    const res = await fetch(url, { method: 'PUT', headers: JSON_CT, body: '{"a":' });
    await expectError(res, 400, 'INVALID_REQUEST');
    assert.equal((await fetch(url, { method: 'HEAD' })).status, 404);
});

test('JSON Message Text: the rule applies to application/json with parameters', async () => {
    const url = bucketUrl();
    await create(url, '{ "a" : 1 }', { 'content-type': 'application/json; charset=utf-8' });
    const res = await fetch(url + '?offset=-1');
    assert.equal(await res.text(), '{"a":1}\n');
    assert.equal(res.headers.get('content-type'), 'application/x-ndjson');
});
