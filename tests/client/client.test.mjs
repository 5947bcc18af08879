// dstream driven by the official TypeScript client, @durable-streams/client
// (version pinned in package.json), on the /v1/stream/ surface: what an
// application built on that client sees.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { DurableStream, IdempotentProducer, stream } from '@durable-streams/client';
import { startServer } from '../http/lib/server.mjs';

let srv;
let counter = 0;
before(async () => { srv = await startServer(); });
after(async () => { await srv.stop(); });

function streamUrl(prefix) {
    counter += 1;
    return `${srv.url}/v1/stream/${prefix}-${process.pid}-${counter}`;
}

const createJson = (url) => DurableStream.create({ url, contentType: 'application/json', warnOnHttp: false });

async function readAll(url, offset = '-1') {
    const res = await stream({ url, offset, live: false, warnOnHttp: false });
    return { items: await res.json(), offset: res.offset, closed: res.streamClosed };
}

// Waits until `pred()` holds, failing after `ms`.
async function until(pred, what, ms = 5000) {
    const deadline = Date.now() + ms;
    while (!pred()) {
        if (Date.now() > deadline) assert.fail(`timed out waiting for ${what}`);
        await new Promise((r) => setTimeout(r, 10));
    }
}

test('client: create, append, head and a catch-up read', async () => {
    const url = streamUrl('basic');
    const handle = await createJson(url);
    await handle.append(JSON.stringify({ n: 1 }));
    await handle.append(JSON.stringify({ n: 2 }));
    const head = await handle.head();
    assert.equal(head.exists, true);
    assert.equal(head.contentType, 'application/json');
    assert.equal(head.streamClosed, false);
    const { items, offset } = await readAll(url);
    assert.deepEqual(items, [{ n: 1 }, { n: 2 }]);
    assert.equal(offset, head.offset);
    // RFC 9110 9.3.2: HEAD's ETag is the one a GET from the start sends.
    const get = await fetch(`${url}?offset=-1`);
    await get.arrayBuffer();
    assert.ok(head.etag, 'HeadResult.etag');
    assert.equal(head.etag, get.headers.get('etag'));
    // Creating it again with the same configuration is idempotent.
    await createJson(url);
    assert.equal((await DurableStream.head({ url, warnOnHttp: false })).exists, true);
});

test('client: catch-up from a saved offset returns only what came after it', async () => {
    const url = streamUrl('catchup');
    const handle = await createJson(url);
    await handle.append(JSON.stringify({ before: true }));
    const first = await readAll(url);
    await handle.append(JSON.stringify({ after: 1 }));
    await handle.append(JSON.stringify({ after: 2 }));
    const rest = await readAll(url, first.offset);
    assert.deepEqual(rest.items, [{ after: 1 }, { after: 2 }]);
    const text = await (await stream({ url, offset: '-1', live: false, warnOnHttp: false })).text();
    assert.match(text, /"before":true/);
});

test('client: an idempotent producer writes each message exactly once, in order', async () => {
    const url = streamUrl('producer');
    const handle = await createJson(url);
    const errors = [];
    const producer = new IdempotentProducer(handle, 'writer-1', { lingerMs: 1, maxInFlight: 3, onError: (e) => errors.push(e) });
    for (let i = 0; i < 200; i++) producer.append(JSON.stringify({ i }));
    await producer.flush();
    await producer.detach();
    assert.deepEqual(errors, []);
    const { items } = await readAll(url);
    assert.deepEqual(items, Array.from({ length: 200 }, (_, i) => ({ i })));

    // Every batch sent twice, as after an answer lost on the way back: the
    // server acknowledges the repeat and stores nothing again.
    const repeats = [];
    const resend = async (input, init) => {
        await (await fetch(input, init)).arrayBuffer();
        const repeat = await fetch(input, init);
        repeats.push(repeat.status);
        return repeat;
    };
    const again = new IdempotentProducer(handle, 'writer-2', { lingerMs: 1, fetch: resend, onError: (e) => errors.push(e) });
    for (let i = 0; i < 20; i++) again.append(JSON.stringify({ again: i }));
    await again.flush();
    await again.detach();
    assert.deepEqual(errors, []);
    const repeated = (await readAll(url)).items.filter((m) => 'again' in m);
    assert.deepEqual(repeated, Array.from({ length: 20 }, (_, i) => ({ again: i })));
    assert.ok(repeats.length > 0 && repeats.every((status) => status === 204), `repeats answered ${repeats}`);
});

for (const live of ['sse', 'long-poll']) {
    test(`client: a live ${live} read receives appends as they happen`, async () => {
        const url = streamUrl(`live-${live}`);
        const handle = await createJson(url);
        await handle.append(JSON.stringify({ seq: 0 }));
        const res = await stream({ url, offset: '-1', live, warnOnHttp: false });
        const seen = [];
        res.subscribeJson((batch) => { seen.push(...batch.items); });
        try {
            await until(() => seen.length === 1, 'the existing message');
            await handle.append(JSON.stringify({ seq: 1 }));
            await handle.append(JSON.stringify({ seq: 2 }));
            await until(() => seen.length === 3, 'the live messages');
            assert.deepEqual(seen, [{ seq: 0 }, { seq: 1 }, { seq: 2 }]);
        } finally {
            res.cancel();
        }
    });
}

test('client: closure ends live readers, is visible on HEAD and refuses later appends', async () => {
    const url = streamUrl('closure');
    const handle = await createJson(url);
    await handle.append(JSON.stringify({ last: false }));
    const res = await stream({ url, offset: '-1', live: 'sse', warnOnHttp: false });
    const seen = [];
    let closedSeen = false;
    res.subscribeJson((batch) => {
        seen.push(...batch.items);
        if (batch.streamClosed) closedSeen = true;
    });
    try {
        await until(() => seen.length === 1, 'the first message');
        const producer = new IdempotentProducer(handle, 'closer', { lingerMs: 1 });
        producer.append(JSON.stringify({ last: true }));
        await producer.close();
        await until(() => closedSeen, 'the closure on the live read');
        assert.deepEqual(seen, [{ last: false }, { last: true }]);
    } finally {
        res.cancel();
    }
    assert.equal((await handle.head()).streamClosed, true);
    await assert.rejects(handle.append(JSON.stringify({ late: true })), (e) => e.status === 409 || /closed/i.test(e.message));
    const { items, closed } = await readAll(url);
    assert.equal(items.length, 2);
    assert.equal(closed, true);
    // Closing again is idempotent.
    const again = await handle.close();
    assert.equal(again.finalOffset, (await handle.head()).offset);
});

test('client: a byte stream round-trips binary data', async () => {
    const url = streamUrl('bytes');
    const handle = await DurableStream.create({ url, contentType: 'application/octet-stream', warnOnHttp: false });
    const bytes = Uint8Array.from([0, 1, 2, 0xfe, 0xff, 10, 13]);
    await handle.append(bytes);
    const res = await stream({ url, offset: '-1', live: false, warnOnHttp: false });
    assert.deepEqual(Buffer.from(await res.body()), Buffer.from(bytes));
});

test('client: delete removes the stream', async () => {
    const url = streamUrl('delete');
    const handle = await createJson(url);
    await handle.delete();
    assert.equal((await DurableStream.head({ url, warnOnHttp: false })).exists, false);
});
