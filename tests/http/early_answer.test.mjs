// extensions 5.5: answers before the body. A producer write with
// Stream-Incarnation that is a repeat or a key conflict is answered from its
// headers after `Expect: 100-continue` (no 100 is sent, no body is read) or
// when it declares a body of 64 KiB or more.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';
import { uniq, rawConnect } from './lib/http.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv.stop(); });

// Sends `head` on a fresh socket and collects what arrives within `ms`.
function rawExchange(head, { ms = 1500 } = {}) {
    return new Promise((resolve, reject) => {
        const socket = rawConnect({ port: srv.leaderPort, host: srv.leaderHost });
        let data = '';
        let closed = false;
        socket.on('data', (d) => { data += d.toString('latin1'); });
        socket.on('end', () => { closed = true; });
        socket.on('error', reject);
        socket.on('close', () => { closed = true; });
        socket.write(head);
        setTimeout(() => { socket.destroy(); resolve({ data, closed }); }, ms);
    });
}

async function setUp() {
    const url = `${srv.url}/early-answer/${uniq()}`;
    const put = await fetch(url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' } });
    assert.equal(put.status, 201);
    const incarnation = put.headers.get('stream-incarnation');
    const body = 'x'.repeat(70 * 1024);
    const first = await fetch(url, {
        method: 'POST',
        headers: { 'Content-Type': 'text/plain', 'Stream-Incarnation': incarnation, 'Producer-Id': 'p',
                   'Producer-Epoch': '0', 'Producer-Seq': '0' },
        body,
    });
    assert.equal(first.status, 200);
    return { url, path: new URL(url).pathname, incarnation, body };
}

function postHead(path, incarnation, extra) {
    return `POST ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: text/plain\r\n` +
           `Stream-Incarnation: ${incarnation}\r\nProducer-Id: p\r\nProducer-Epoch: 0\r\nProducer-Seq: 0\r\n` +
           `Content-Length: ${70 * 1024}\r\n${extra}\r\n`;
}

test('ext 5.5: a repeat after Expect: 100-continue is answered 204 with its receipt, without 100 Continue', async () => {
    const { path, incarnation } = await setUp();
    const { data, closed } = await rawExchange(postHead(path, incarnation, 'Expect: 100-continue\r\n'));
    assert.doesNotMatch(data, /100 Continue/);
    assert.match(data, /^HTTP\/1\.1 204 /);
    assert.match(data, /\r\nStream-Offset: 00000000000000000000\r\n/i);
    assert.match(data, /\r\nStream-Next-Offset: 00000000000000071680\r\n/i);
    assert.ok(closed, 'the connection closes: the unsent body never arrives');
});

test('ext 5.5: a key conflict after Expect: 100-continue is answered 403 key-conflict before the body', async () => {
    const { path, incarnation } = await setUp();
    const digest = 'ab'.repeat(32);
    const { data } = await rawExchange(postHead(path, incarnation, `Producer-Digest: ${digest}\r\nExpect: 100-continue\r\n`));
    assert.doesNotMatch(data, /100 Continue/);
    assert.match(data, /^HTTP\/1\.1 403 /);
    assert.match(data, /\r\nProducer-Outcome: key-conflict\r\n/i);
    assert.match(data, /\r\nProducer-Epoch: 0\r\n/i);
    assert.match(data, /"code":"PRODUCER_KEY_CONFLICT"/);
});

test('ext 5.5: a new write after Expect: 100-continue gets 100 Continue and then applies', async () => {
    const { url, incarnation } = await setUp();
    const path = new URL(url).pathname;
    const head = postHead(path, incarnation, 'Expect: 100-continue\r\n').replace('Producer-Seq: 0', 'Producer-Seq: 2');
    const { data } = await rawExchange(head, { ms: 500 });
    assert.match(data, /^HTTP\/1\.1 100 Continue\r\n/);
});

test('ext 5.5: a repeat declaring a body of 64 KiB or more is answered from its headers; the connection stays usable', async () => {
    const { url, path, incarnation, body } = await setUp();
    const second = `GET ${path}?offset=-1&max_bytes=4 HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
    const { data } = await rawExchange(postHead(path, incarnation, '') + body + second);
    const answers = data.match(/HTTP\/1\.1 \d{3} /g) ?? [];
    assert.deepEqual(answers, ['HTTP/1.1 204 ', 'HTTP/1.1 200 ']);
    assert.match(data, /\r\nStream-Next-Offset: 00000000000000071680\r\n/i);
    // Nothing was appended twice.
    const head = await fetch(url, { method: 'HEAD' });
    assert.equal(head.headers.get('stream-next-offset'), String(70 * 1024).padStart(20, '0'));
});
