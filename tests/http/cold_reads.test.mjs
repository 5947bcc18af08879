// Catch-up reads of bytes that moved to chunk files (durable mode): they are
// sent from the files with sendfile, alone or followed by hot bytes, and must
// be the stream's bytes exactly, wherever a read starts and ends.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, suiteOverTls } from './lib/server.mjs';
import { uniq, sleep, rawConnect } from './lib/http.mjs';
import { parsePrometheus, value } from './lib/prometheus.mjs';
import { coldStoreOfSuite } from './lib/files.mjs';

const MIB = 1 << 20;
let srv;
let url;
let expected;

async function scrape() {
    return parsePrometheus(await (await fetch(`${srv.url}/__ursula/metrics`)).text());
}

// Byte i of the stream is a function of i, so a byte from the wrong place shows.
function pattern(from, length) {
    const out = Buffer.alloc(length);
    for (let i = 0; i < length; i++) out[i] = ((from + i) * 7 + ((from + i) >> 11)) & 0xff;
    return out;
}

before(async () => {
    srv = await startServer({ memory: false, extraArgs: ['--hot-bytes', String(MIB)] });
    url = `${srv.url}/cold-read/${uniq('c')}`;
    const created = await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' } });
    assert.equal(created.status, 201);
    expected = pattern(0, 6 * MIB + 12345);
    for (let at = 0; at < expected.length; at += MIB) {
        const body = expected.subarray(at, Math.min(at + MIB, expected.length));
        const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body });
        assert.equal(r.status, 204);
    }
    // Wait until most of the stream has left the hot tier.
    const deadline = Date.now() + 15_000;
    while (value(await scrape(), 'dstream_hot_bytes') > 2 * MIB) {
        assert.ok(Date.now() < deadline, 'the stream did not move to chunk files within 15 s');
        await sleep(50);
    }
});
after(async () => { await srv?.stop(); });

// Reads the whole stream from -1 following Stream-Next-Offset, `maxBytes` at a time.
async function readAll(maxBytes) {
    const pieces = [];
    let offset = '-1';
    for (let i = 0; i < 10_000; i++) {
        const r = await fetch(`${url}?offset=${encodeURIComponent(offset)}&max_bytes=${maxBytes}`);
        assert.equal(r.status, 200);
        const body = Buffer.from(await r.arrayBuffer());
        assert.equal(Number(r.headers.get('content-length')), body.length);
        pieces.push(body);
        offset = r.headers.get('stream-next-offset');
        if (r.headers.get('stream-up-to-date') === 'true') return Buffer.concat(pieces);
    }
    assert.fail('the read never reached the tail');
}

test('a catch-up read of cold bytes sends them from the cold store (chunk files, or S3), byte for byte', async () => {
    // A local store's chunks go out from their files; S3's through GETs.
    const s3 = coldStoreOfSuite() !== null;
    const gets = (m) => value(m, 'dstream_object_store_bytes_total', { op: 'stream_range' }) +
        value(m, 'dstream_object_store_bytes_total', { op: 'get' });
    const before = await scrape();
    const whole = await readAll(64 * MIB);
    assert.equal(whole.length, expected.length);
    assert.ok(whole.equals(expected), 'the bytes read are the bytes appended');
    const after = await scrape();
    const sent = value(after, 'dstream_read_bytes_sent_from_files_total') -
        value(before, 'dstream_read_bytes_sent_from_files_total');
    if (suiteOverTls) {
        // TLS frames every byte in the process: no sendfile.
        assert.equal(sent, 0, 'over TLS no byte goes by sendfile');
    } else if (s3) {
        assert.equal(sent, 0, 'S3 keeps no chunk files here');
        assert.ok(gets(after) - gets(before) >= 4 * MIB, 'the cold bytes came from S3 GETs');
    } else {
        assert.ok(sent >= 4 * MIB, `only ${sent} bytes came from files`);
    }
});

test('reads of odd sizes across chunk and hot boundaries get every byte once', async () => {
    for (const maxBytes of [1, 299_999, MIB + 1]) {
        if (maxBytes === 1) {
            // One byte at a time is too slow for the whole stream: a few reads at chunk edges.
            for (const at of [0, MIB - 1, MIB, 5 * MIB - 1]) {
                const r = await fetch(`${url}?offset=-1&max_bytes=${at + 1}`);
                const next = r.headers.get('stream-next-offset');
                await r.arrayBuffer();
                const one = await fetch(`${url}?offset=${encodeURIComponent(next)}&max_bytes=1`);
                assert.deepEqual(Buffer.from(await one.arrayBuffer()), expected.subarray(at + 1, at + 2));
            }
            continue;
        }
        const whole = await readAll(maxBytes);
        assert.ok(whole.equals(expected), `reads of at most ${maxBytes} bytes`);
    }
});

test('a HEAD or a 304 of a cold range sends no body', async () => {
    const r = await fetch(`${url}?offset=-1&max_bytes=65536`);
    const etag = r.headers.get('etag');
    await r.arrayBuffer();
    const again = await fetch(`${url}?offset=-1&max_bytes=65536`, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.equal((await again.arrayBuffer()).byteLength, 0);
    const head = await fetch(url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal((await head.arrayBuffer()).byteLength, 0);
});

test('a reader that leaves in the middle of a body sent from files does not stop the server', async () => {
    const { hostname, port, pathname } = new URL(url);
    for (let i = 0; i < 4; i++) {
        await new Promise((resolve, reject) => {
            const socket = rawConnect({ port: Number(port), host: hostname }, () => {
                socket.write(`GET ${pathname}?offset=-1&max_bytes=${6 * MIB} HTTP/1.1\r\nHost: ${hostname}\r\n\r\n`);
            });
            socket.once('data', () => {
                // Gone with most of the body unread, by a reset or a close:
                // the server's next sends fail (ECONNRESET, then EPIPE).
                if (i % 2 === 0) socket.resetAndDestroy();
                else socket.destroy();
                resolve();
            });
            socket.on('error', reject);
        });
    }
    await sleep(200);
    const r = await fetch(`${url}?offset=-1&max_bytes=16`);
    assert.equal(r.status, 200);
    assert.deepEqual(Buffer.from(await r.arrayBuffer()), expected.subarray(0, 16));
});
