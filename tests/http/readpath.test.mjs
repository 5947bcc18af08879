// Read path parameters and representations (extensions 9; base protocol 5.7, 5.8).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq, expectError, offsetNum, utf8len, openSse, sleep } from './lib/http.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

async function makeStream(body = '', contentType = 'application/octet-stream', bucket = 'bkt-read') {
    const url = `${srv.url}/${bucket}/${uniq('r')}`;
    const res = await fetch(url, { method: 'PUT', headers: { 'content-type': contentType }, body });
    assert.equal(res.status, 201, await res.text());
    return url;
}

async function timedPoll(url, query) {
    const started = performance.now();
    const res = await fetch(`${url}?offset=now&live=long-poll${query}`);
    await res.arrayBuffer();
    return { res, ms: performance.now() - started };
}

// Data and control events of an SSE read until upToDate / closed.
async function sseUntilUpToDate(url, ms = 3000) {
    const sse = await openSse(url);
    assert.equal(sse.res.status, 200);
    const r = await sse.read({
        ms,
        done: (events) => events.some((e) => e.event === 'control' && JSON.parse(e.data).upToDate),
    });
    return { res: sse.res, ...r };
}

test('ext 9.1: timeout_ms=200 makes a long-poll answer 204 after about 200 ms', async () => {
    const url = await makeStream('abc');
    const { res, ms } = await timedPoll(url, '&timeout_ms=200');
    assert.equal(res.status, 204);
    assert.ok(ms >= 180 && ms < 900, `answered after ${ms.toFixed(0)} ms`);
    assert.equal(res.headers.get('stream-up-to-date'), 'true');
    assert.equal(offsetNum(res.headers.get('stream-next-offset')), 3);
    assert.ok(res.headers.get('stream-cursor'), 'base 5.7: a 204 of an open stream carries Stream-Cursor');
});

test('ext 9.1: an unparseable timeout_ms means the default, 1000 ms', async () => {
    const url = await makeStream();
    const results = await Promise.all(['abc', '1.5', '', '200ms'].map((v) => timedPoll(url, `&timeout_ms=${v}`)));
    for (const { res, ms } of results) {
        assert.equal(res.status, 204);
        assert.ok(ms >= 950 && ms < 2500, `answered after ${ms.toFixed(0)} ms`);
    }
});

test('ext 9.1: timeout_ms=0 (or negative) is clamped to 1 ms', async () => {
    const url = await makeStream();
    for (const v of ['0', '-100']) {
        const { res, ms } = await timedPoll(url, `&timeout_ms=${v}`);
        assert.equal(res.status, 204);
        assert.ok(ms < 400, `timeout_ms=${v} answered after ${ms.toFixed(0)} ms`);
    }
});

test('ext 9.1: a huge timeout_ms is clamped (not an error) and an append wakes the poll', async () => {
    const url = await makeStream('x');
    const started = performance.now();
    const poll = fetch(`${url}?offset=00000000000000000001&live=long-poll&timeout_ms=999999999999`);
    await sleep(100);
    await fetch(url, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: 'yz' });
    const res = await poll;
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'yz');
    assert.ok(performance.now() - started < 1500);
    assert.ok(res.headers.get('stream-cursor'), 'base 5.7: a long-poll 200 carries Stream-Cursor');
});

test('ext 9.1: timeout_ms is ignored on catch-up reads', async () => {
    const url = await makeStream('abc');
    const started = performance.now();
    const res = await fetch(`${url}?offset=-1&timeout_ms=5000`);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), 'abc');
    const tail = await fetch(`${url}?offset=now&timeout_ms=5000`);
    assert.equal(tail.status, 200);
    assert.ok(performance.now() - started < 500);
});

test('ext 9.1: timeout_ms is ignored on SSE reads (the stream stays open past it)', async () => {
    const url = await makeStream('a', 'text/plain');
    const sse = await openSse(`${url}?offset=-1&live=sse&timeout_ms=1`);
    setTimeout(() => {
        fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: 'later' }).catch(() => {});
    }, 300);
    const { events } = await sse.read({
        ms: 3000,
        done: (ev) => ev.some((e) => e.event === 'data' && e.data.includes('later')),
    });
    assert.ok(events.some((e) => e.event === 'data' && e.data === 'later'), JSON.stringify(events));
});

test('ext 9.2: consistency=leader and consistency=local are accepted on a catch-up read', async () => {
    const url = await makeStream('abc');
    for (const c of ['leader', 'local']) {
        const res = await fetch(`${url}?offset=-1&consistency=${c}`);
        assert.equal(res.status, 200);
        assert.equal(await res.text(), 'abc');
        assert.equal(res.headers.get('stream-up-to-date'), 'true');
    }
    const now = await fetch(`${url}?offset=now&consistency=leader`);
    assert.equal(now.status, 200);
    assert.equal(offsetNum(now.headers.get('stream-next-offset')), 3);
});

test('ext 9.2: any other consistency value is 400 INVALID_QUERY', async () => {
    const url = await makeStream('abc');
    for (const c of ['bogus', 'LEADER', '', 'leader%20']) {
        await expectError(await fetch(`${url}?offset=-1&consistency=${c}`), 400, 'INVALID_QUERY');
    }
});

test('ext 9.2: consistency=leader combined with live is 400 INVALID_QUERY', async () => {
    const url = await makeStream('abc');
    for (const live of ['long-poll', 'sse']) {
        const started = performance.now();
        await expectError(await fetch(`${url}?offset=-1&live=${live}&consistency=leader`), 400, 'INVALID_QUERY');
        assert.ok(performance.now() - started < 500, 'refused at once, without waiting');
    }
    // consistency=local with live is fine.
    const ok = await fetch(`${url}?offset=now&live=long-poll&consistency=local&timeout_ms=1`);
    assert.equal(ok.status, 204);
});

test('ext 9.4: SSE on a bucketed JSON stream carries Stream-Data-Content-Type: application/x-ndjson and NDJSON text', async () => {
    const url = await makeStream('[{"b":1,"a":2}, {"z":[1, 2]}]', 'application/json');
    const { res, events } = await sseUntilUpToDate(`${url}?offset=-1&live=sse`);
    assert.equal(res.headers.get('content-type'), 'text/event-stream');
    assert.equal(res.headers.get('stream-data-content-type'), 'application/x-ndjson');
    assert.equal(res.headers.get('stream-sse-data-encoding'), null, 'JSON is text, not base64');
    const data = events.filter((e) => e.event === 'data').map((e) => e.data).join('');
    // Each line of the data is one stored message (the trailing LF is checked below).
    assert.deepEqual(data.split('\n').filter((l) => l !== ''), ['{"b":1,"a":2}', '{"z":[1,2]}']);
    const control = JSON.parse(events.filter((e) => e.event === 'control').at(-1).data);
    assert.equal(offsetNum(control.streamNextOffset), utf8len('{"b":1,"a":2}\n{"z":[1,2]}\n'));
    assert.equal(control.upToDate, true);
    assert.ok(control.streamCursor);
});

test('ext 9.4 / JSON Message Text: SSE data carries the stored text unchanged, final LF included (bytes match the offsets)',
     async () => {
    const url = await makeStream('[{"m":1},{"m":2}]', 'application/json');
    const { events } = await sseUntilUpToDate(`${url}?offset=-1&live=sse`);
    const data = events.filter((e) => e.event === 'data').map((e) => e.data).join('');
    const catchUp = await (await fetch(`${url}?offset=-1`)).text();
    assert.equal(data, catchUp);
});

test('ext 9.4: SSE data events split by max_bytes join to exactly the NDJSON bytes (leading spaces kept)',
     async () => {
    const url = await makeStream('[{"k":"a b"},{"k":" x"}]', 'application/json');
    const catchUp = await (await fetch(`${url}?offset=-1`)).text();
    const { events } = await sseUntilUpToDate(`${url}?offset=-1&live=sse&max_bytes=7`);
    let prev = 0;
    let joined = '';
    for (let i = 0; i < events.length; i++) {
        if (events[i].event !== 'data') continue;
        const control = JSON.parse(events[i + 1].data);
        const next = offsetNum(control.streamNextOffset);
        assert.equal(utf8len(events[i].data), next - prev, `event ${JSON.stringify(events[i].data)}`);
        prev = next;
        joined += events[i].data;
    }
    assert.equal(joined, catchUp);
});

test('base 5.8: SSE on a text/plain stream carries the text unchanged (a line starting with a space keeps it)',
     async () => {
    const url = await makeStream(' lead', 'text/plain');
    const { events } = await sseUntilUpToDate(`${url}?offset=-1&live=sse`);
    assert.equal(events.find((e) => e.event === 'data').data, ' lead');
});

test('ext 9.3: a text SSE data event cut by max_bytes holds whole UTF-8 characters',
     async () => {
    const url = await makeStream('a😀b', 'text/plain');
    const { events } = await sseUntilUpToDate(`${url}?offset=-1&live=sse&max_bytes=4`);
    const data = events.filter((e) => e.event === 'data').map((e) => e.data);
    assert.ok(!data.join('').includes('\ufffd'), JSON.stringify(data));
    assert.equal(data.join(''), 'a😀b');
});

test('ext 9.5: binary SSE is base64 with Stream-Sse-Data-Encoding: base64 and the stream type in Stream-Data-Content-Type', async () => {
    const bytes = Buffer.from(Array.from({ length: 256 }, (_, i) => i));
    const url = await makeStream(bytes, 'application/x-custom-binary');
    const { res, events } = await sseUntilUpToDate(`${url}?offset=-1&live=sse`);
    assert.equal(res.headers.get('stream-sse-data-encoding'), 'base64');
    assert.equal(res.headers.get('stream-data-content-type'), 'application/x-custom-binary');
    const decoded = [];
    let prev = 0;
    for (let i = 0; i < events.length; i++) {
        if (events[i].event !== 'data') continue;
        const text = events[i].data.replace(/[\r\n]/g, '');
        assert.match(text, /^[A-Za-z0-9+/]*={0,2}$/);
        assert.equal(text.length % 4, 0);
        const chunk = Buffer.from(text, 'base64');
        decoded.push(chunk);
        assert.equal(events[i + 1].event, 'control', 'a control event follows every data event');
        const next = offsetNum(JSON.parse(events[i + 1].data).streamNextOffset);
        assert.equal(next - prev, chunk.length, 'streamNextOffset is just past the decoded bytes');
        prev = next;
    }
    assert.ok(Buffer.concat(decoded).equals(bytes));
});

test('ext 9.5 / 9.3: binary SSE split by max_bytes: each event decodes to at most max_bytes bytes', async () => {
    const bytes = Buffer.from(Array.from({ length: 1000 }, (_, i) => (i * 7) & 0xff));
    const url = await makeStream(bytes);
    const { events } = await sseUntilUpToDate(`${url}?offset=-1&live=sse&max_bytes=100`);
    const chunks = events.filter((e) => e.event === 'data').map((e) => Buffer.from(e.data.replace(/[\r\n]/g, ''), 'base64'));
    assert.equal(chunks.length, 10);
    for (const c of chunks) assert.ok(c.length <= 100);
    assert.ok(Buffer.concat(chunks).equals(bytes));
});

test('ext 9.3: binary SSE honors max_bytes below 4 (only text SSE raises it to 4)',
     async () => {
    const bytes = Buffer.from([1, 2, 3, 4, 5, 6]);
    const url = await makeStream(bytes);
    const { events } = await sseUntilUpToDate(`${url}?offset=-1&live=sse&max_bytes=2`);
    const chunks = events.filter((e) => e.event === 'data').map((e) => Buffer.from(e.data, 'base64'));
    assert.deepEqual(chunks.map((c) => c.length), [2, 2, 2]);
});

test('base 5.8: SSE on a text/* stream is not base64', async () => {
    const url = await makeStream('hello', 'text/plain; charset=utf-8');
    const { res, events } = await sseUntilUpToDate(`${url}?offset=-1&live=sse`);
    assert.equal(res.headers.get('stream-sse-data-encoding'), null);
    assert.equal(events.find((e) => e.event === 'data').data, 'hello');
});

test('base 5.8: SSE on a /v1/stream JSON stream sends JSON arrays in data events', async () => {
    const url = await makeStream('[{"a":1},{"b":[2]}]', 'application/json', 'v1/stream');
    const { events } = await sseUntilUpToDate(`${url}?offset=-1&live=sse`);
    const data = events.filter((e) => e.event === 'data').map((e) => JSON.parse(e.data));
    assert.deepEqual(data.flat(), [{ a: 1 }, { b: [2] }]);
});

test('base 5.8: an SSE read of a closed stream ends with streamClosed: true and the server closes the stream', async () => {
    const url = await makeStream('abc', 'text/plain');
    await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } });
    const sse = await openSse(`${url}?offset=-1&live=sse`);
    const { events, ended } = await sse.read({ ms: 3000 });
    assert.ok(ended, 'the server ends the SSE response');
    const last = JSON.parse(events.at(-1).data);
    assert.equal(events.at(-1).event, 'control');
    assert.equal(last.streamClosed, true);
    assert.equal(offsetNum(last.streamNextOffset), 3);
});

test('base 5.7: a long-poll on a closed stream at its tail answers 204 with Stream-Closed at once', async () => {
    const url = await makeStream('abc');
    await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } });
    const started = performance.now();
    const res = await fetch(`${url}?offset=00000000000000000003&live=long-poll&timeout_ms=5000`);
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('stream-closed'), 'true');
    assert.ok(performance.now() - started < 500);
});

test('ext 2.4: a long-poll ends when its stream is deleted while it waits', async () => {
    const url = await makeStream('abc');
    const started = performance.now();
    const poll = fetch(`${url}?offset=00000000000000000003&live=long-poll&timeout_ms=5000`);
    await sleep(100);
    assert.equal((await fetch(url, { method: 'DELETE' })).status, 204);
    const res = await poll;
    assert.ok([404, 412].includes(res.status), `status ${res.status}`);
    assert.ok(performance.now() - started < 2000);
});
