// A live read ends when its stream closes (base protocol 4.1, 5.7, 5.8): once
// a closed stream's reader has every byte, a long-poll answers 204 with
// Stream-Closed and an SSE answer sends a last control event with
// `streamClosed: true` and ends. A reader waiting at the tail is parked until
// a change; the close is that change, and must end the answer at once, not
// at the reader's 60 s timeout.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq } from './lib/http.mjs';
import { within, until } from './lib/within.mjs';

// How soon after the close's answer the live read must have ended.
const END_MS = 2000;

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

async function create(url, body = 'abc') {
    const res = await fetch(url, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body });
    assert.equal(res.status, 201, await res.text());
}

async function close(url, body = undefined) {
    const headers = { 'stream-closed': 'true' };
    if (body !== undefined) headers['content-type'] = 'text/plain';
    const res = await fetch(url, { method: 'POST', headers, body });
    assert.equal(res.status, 204, await res.text());
    return res.headers.get('stream-next-offset');
}

// An SSE read that parses its events as they arrive: `events` grows, `ended`
// resolves when the server ends the body (and rejects if it breaks it).
async function openSse(url) {
    const controller = new AbortController();
    const res = await fetch(url, { signal: controller.signal });
    assert.equal(res.status, 200, `SSE answer ${res.status}`);
    assert.match(res.headers.get('content-type') ?? '', /^text\/event-stream\b/);
    const events = [];
    let raw = '';
    const ended = (async () => {
        const decoder = new TextDecoder();
        let pending = '';
        let current = { event: 'message', data: [] };
        for await (const chunk of res.body) {
            const text = decoder.decode(chunk, { stream: true });
            raw += text;
            pending += text;
            let lf;
            while ((lf = pending.indexOf('\n')) >= 0) {
                const line = pending.slice(0, lf).replace(/\r$/, '');
                pending = pending.slice(lf + 1);
                if (line === '') {
                    if (current.data.length) events.push({ event: current.event, data: current.data.join('\n') });
                    current = { event: 'message', data: [] };
                } else if (line.startsWith('event:')) {
                    current.event = line.slice(6).replace(/^ /, '');
                } else if (line.startsWith('data:')) {
                    current.data.push(line.slice(5).replace(/^ /, ''));
                }
            }
        }
        return events;
    })();
    ended.catch(() => {});  // awaited by the tests; an abort at cleanup is not a failure
    const controls = () => events.filter((e) => e.event === 'control').map((e) => JSON.parse(e.data));
    return { res, events, controls, ended, raw: () => raw, abort: () => controller.abort() };
}

// Opens SSE at the tail, waits until the reader is parked there (its first
// control event says upToDate), closes the stream and checks that the body
// ends within END_MS with a last control event that says so.
async function expectSseEndsAtClose(url, { closeBody } = {}) {
    await create(url);
    const sse = await openSse(`${url}?offset=now&live=sse`);
    try {
        await until(() => sse.controls().some((c) => c.upToDate === true), 5000,
                    () => `the first control event at the tail; got ${JSON.stringify(sse.raw())}`);
        assert.equal(sse.controls()[0].streamClosed, undefined, 'the stream is not closed yet');
        const tail = await close(url, closeBody);
        const started = Date.now();
        await within(sse.ended, END_MS,
                     () => `the SSE body to end after the stream closed; received ${JSON.stringify(sse.raw())}`);
        const waited = Date.now() - started;
        const last = sse.events.at(-1);
        assert.equal(last.event, 'control', `the last event is a control event: ${sse.raw()}`);
        const control = JSON.parse(last.data);
        assert.equal(control.streamClosed, true, `the last control event says the stream is closed: ${last.data}`);
        assert.equal(control.streamNextOffset, tail, 'the last control event is at the closed tail');
        assert.equal(control.streamCursor, undefined, 'a closed stream\'s control event carries no cursor');
        const data = sse.events.filter((e) => e.event === 'data').map((e) => e.data).join('');
        assert.equal(data, closeBody ?? '', 'the data events hold what the close appended, nothing else');
        return waited;
    } finally {
        sse.abort();
    }
}

test('base 5.8: an SSE reader at the tail of a bucketed stream ends when the stream closes', async () => {
    await expectSseEndsAtClose(`${srv.url}/live-end/${uniq('b')}`);
});

test('base 5.8: an SSE reader at the tail of a /v1/stream stream ends when the stream closes', async () => {
    await expectSseEndsAtClose(`${srv.url}/v1/stream/${uniq('v1')}`);
});

test('base 5.8: an SSE reader at the tail gets the bytes of a closing append, then ends', async () => {
    await expectSseEndsAtClose(`${srv.url}/live-end/${uniq('last')}`, { closeBody: 'the end' });
});

test('base 5.8: several SSE readers at the tail all end when the stream closes', async () => {
    const url = `${srv.url}/live-end/${uniq('many')}`;
    await create(url);
    const readers = [];
    try {
        for (let i = 0; i < 5; i++) readers.push(await openSse(`${url}?offset=now&live=sse`));
        await until(() => readers.every((r) => r.controls().length > 0), 5000, 'every reader\'s first control event');
        const tail = await close(url);
        await within(Promise.all(readers.map((r) => r.ended)), END_MS,
                     () => `every SSE body to end after the close; ${readers.filter((r) => r.controls().at(-1)?.streamClosed !== true).length} did not`);
        for (const r of readers) {
            assert.deepEqual(r.controls().at(-1), { streamNextOffset: tail, upToDate: true, streamClosed: true });
        }
    } finally {
        for (const r of readers) r.abort();
    }
});

test('base 5.7: a long-poll waiting at the tail answers 204 Stream-Closed when the stream closes', async () => {
    for (const url of [`${srv.url}/live-end/${uniq('lp')}`, `${srv.url}/v1/stream/${uniq('lp')}`]) {
        await create(url);
        const head = await fetch(url, { method: 'HEAD' });
        const tail = head.headers.get('stream-next-offset');
        const controller = new AbortController();
        const poll = fetch(`${url}?offset=${tail}&live=long-poll&timeout_ms=30000`, { signal: controller.signal });
        poll.catch(() => {});
        try {
            // The poll is parked when the server counts it as a live reader.
            await until(async () => {
                const m = await (await fetch(`${srv.url}/__ursula/metrics`)).text();
                return /^dstream_live_readers\{mode="long_poll"\} [1-9]/m.test(m);
            }, 5000, 'the long-poll to wait at the tail');
            await close(url);
            const res = await within(poll, END_MS, `the long-poll on ${url} to answer after the close`);
            assert.equal(res.status, 204, await res.text());
            assert.equal(res.headers.get('stream-closed'), 'true');
            assert.equal(res.headers.get('stream-next-offset'), tail);
        } finally {
            controller.abort();
        }
    }
});
