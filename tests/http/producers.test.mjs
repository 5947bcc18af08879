// Write keys and typed answers (extensions 5.1-5.3) and Stream-Seq conflicts
// (5.8): producer receipts, Producer-Digest identity, claims and closed
// epochs, sequence answers, and the 409s of Stream-Seq and content type.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync } from 'node:fs';
import path from 'node:path';
import { startServer } from './lib/server.mjs';
import { uniq, expectError, snapshot, offsetNum, RawConn, rawRequest, sleep } from './lib/http.mjs';
import { skipUnlessCi, requireUnderCi } from './lib/ci.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

const OCTET = { 'content-type': 'application/octet-stream' };
const JSON_CT = { 'content-type': 'application/json' };

const streamUrl = (prefix = 'p') => `${srv.url}/bkt-prod/${uniq(prefix)}`;

async function create(body = '', headers = OCTET) {
    const url = streamUrl();
    const res = await fetch(url, { method: 'PUT', headers, body: body === '' ? undefined : body });
    const text = await res.text();
    assert.equal(res.status, 201, text);
    return url;
}

const producer = (id, epoch, seq) => ({ 'producer-id': id, 'producer-epoch': String(epoch), 'producer-seq': String(seq) });

// A producer write: POST with the producer headers and `extra` headers.
async function write(url, id, epoch, seq, body, extra = {}) {
    return fetch(url, { method: 'POST', headers: { ...OCTET, ...producer(id, epoch, seq), ...extra }, body });
}

// BLAKE3-256 from the b3sum command-line tool; the digest tests are skipped
// without it, and fail without it under CI (lib/ci.mjs).
const b3sumAbsent = (() => {
    try {
        execFileSync('b3sum', ['--version'], { stdio: 'ignore' });
        return null;
    } catch {
        return 'b3sum is not installed';
    }
})();
const b3sumMissing = skipUnlessCi(b3sumAbsent);
const blake3 = (data) => {
    requireUnderCi(b3sumAbsent);
    return execFileSync('b3sum', ['--no-names'], { input: Buffer.from(data) }).toString().trim();
};

// The headers every producer 403 must carry (ext 5.3): Producer-Epoch and
// exactly one Producer-Outcome (two field lines would be joined with ", ").
function checkProducer403(res, epoch, outcome) {
    assert.equal(res.status, 403);
    assert.equal(res.headers.get('producer-epoch'), String(epoch), 'Producer-Epoch');
    const got = res.headers.get('producer-outcome');
    assert.ok(got !== null, 'a producer 403 without Producer-Outcome');
    assert.ok(!got.includes(','), `more than one Producer-Outcome: ${got}`);
    assert.equal(got, outcome, 'Producer-Outcome');
}

// The receipt of an applied write (ext 5.3).
function checkReceipt(res, { status, offset, next, epoch, seq }) {
    assert.equal(res.status, status, `status ${res.status}, expected ${status}`);
    assert.equal(res.headers.get('producer-outcome'), null, 'a receipt carries no Producer-Outcome');
    assert.equal(offsetNum(res.headers.get('stream-offset')), offset, 'Stream-Offset');
    assert.equal(offsetNum(res.headers.get('stream-next-offset')), next, 'Stream-Next-Offset');
    assert.equal(res.headers.get('producer-epoch'), String(epoch), 'Producer-Epoch');
    assert.equal(res.headers.get('producer-seq'), String(seq), 'Producer-Seq');
}

async function readAll(url) {
    const res = await fetch(url + '?offset=-1');
    assert.equal(res.status, 200);
    return res.text();
}

// ---------------------------------------------------------------------------
// 5.1 Keys

test('ext 5.1: a create (PUT) with producer headers answers 400 INVALID_PRODUCER and creates nothing', async () => {
    const cases = [
        producer('a', 0, 0),
        { 'producer-id': 'a' },
        { 'producer-epoch': '0', 'producer-seq': '0' },
    ];
    for (const headers of cases) {
        const url = streamUrl('nocreate');
        const res = await fetch(url, { method: 'PUT', headers: { ...OCTET, ...headers }, body: 'x' });
        await expectError(res, 400, 'INVALID_PRODUCER');
        assert.equal((await fetch(url, { method: 'HEAD' })).status, 404, `created with ${JSON.stringify(headers)}`);
    }
    // On an existing stream, the PUT (otherwise an idempotent 200) is refused the same way.
    const url = await create('x');
    const before = await snapshot(url);
    const res = await fetch(url, { method: 'PUT', headers: { ...OCTET, ...producer('a', 0, 0) }, body: 'x' });
    await expectError(res, 400, 'INVALID_PRODUCER');
    assert.deepEqual(await snapshot(url), before);
});

// ---------------------------------------------------------------------------
// 5.3 Receipts

test('ext 5.3: a new producer write answers 200 with its receipt (Stream-Offset, Stream-Next-Offset, Producer-Epoch, Producer-Seq)', async () => {
    const url = await create('seed');
    checkReceipt(await write(url, 'a', 0, 0, 'hello'), { status: 200, offset: 4, next: 9, epoch: 0, seq: 0 });
    checkReceipt(await write(url, 'a', 0, 1, 'xy'), { status: 200, offset: 9, next: 11, epoch: 0, seq: 1 });
    // Another producer's write in between: its own range.
    checkReceipt(await write(url, 'b', 3, 0, 'B'), { status: 200, offset: 11, next: 12, epoch: 3, seq: 0 });
    checkReceipt(await write(url, 'a', 0, 2, 'z'), { status: 200, offset: 12, next: 13, epoch: 0, seq: 2 });
    assert.equal(await readAll(url), 'seedhelloxyBz');
});

test('ext 5.3: an exact repeat of the newest write answers 204 with the same Stream-Offset and Stream-Next-Offset, nothing applied', async () => {
    const url = await create('seed');
    const first = await write(url, 'a', 0, 0, 'hello');
    checkReceipt(first, { status: 200, offset: 4, next: 9, epoch: 0, seq: 0 });
    // Another write moves the tail, so a repeat must report its own range, not the tail.
    assert.equal((await fetch(url, { method: 'POST', headers: OCTET, body: 'plain' })).status, 204);
    const before = await snapshot(url);
    for (let i = 0; i < 2; i++) {
        const again = await write(url, 'a', 0, 0, 'hello');
        checkReceipt(again, { status: 204, offset: 4, next: 9, epoch: 0, seq: 0 });
    }
    assert.deepEqual(await snapshot(url), before, 'a repeat applied bytes');
});

test('ext 5.3: a repeat of an older write of the epoch answers 204 with Producer-Outcome: receipt-evicted and no Stream-Offset', async () => {
    const url = await create();
    await write(url, 'a', 0, 0, 'one');
    await write(url, 'a', 0, 1, 'two');
    const before = await snapshot(url);
    const res = await write(url, 'a', 0, 0, 'one');
    assert.equal(res.status, 204);
    assert.equal(res.headers.get('producer-outcome'), 'receipt-evicted');
    assert.equal(res.headers.get('stream-offset'), null, 'an evicted receipt carries no range');
    assert.equal(res.headers.get('producer-epoch'), '0');
    // Producer-Seq is the epoch's highest applied seq, not the repeated one.
    assert.equal(res.headers.get('producer-seq'), '1');
    assert.deepEqual(await snapshot(url), before);
});

test('ext 5.3: the close-only producer write answers 204 with its receipt and Stream-Closed: true, and so does its repeat', async () => {
    const url = await create('ab');
    checkReceipt(await write(url, 'a', 0, 0, 'cd'), { status: 200, offset: 2, next: 4, epoch: 0, seq: 0 });
    const closeHeaders = { ...producer('a', 0, 1), 'stream-closed': 'true' };
    const close = await fetch(url, { method: 'POST', headers: closeHeaders });
    checkReceipt(close, { status: 204, offset: 4, next: 4, epoch: 0, seq: 1 });
    assert.equal(close.headers.get('stream-closed'), 'true');
    assert.equal((await fetch(url, { method: 'HEAD' })).headers.get('stream-closed'), 'true');
    const again = await fetch(url, { method: 'POST', headers: closeHeaders });
    checkReceipt(again, { status: 204, offset: 4, next: 4, epoch: 0, seq: 1 });
    assert.equal(again.headers.get('stream-closed'), 'true');
    assert.equal(await readAll(url), 'abcd');
});

test('ext 5.3: an append that closes the stream answers 200 with its receipt and Stream-Closed: true; its repeat 204 with the same', async () => {
    const url = await create();
    const h = { 'stream-closed': 'true' };
    const first = await write(url, 'a', 0, 0, 'last', h);
    checkReceipt(first, { status: 200, offset: 0, next: 4, epoch: 0, seq: 0 });
    assert.equal(first.headers.get('stream-closed'), 'true');
    const again = await write(url, 'a', 0, 0, 'last', h);
    checkReceipt(again, { status: 204, offset: 0, next: 4, epoch: 0, seq: 0 });
    assert.equal(again.headers.get('stream-closed'), 'true');
});

test('ext 5.3: a repeat is decided before the closed-stream check: after a close, a repeat of the newest write still gets its receipt', async () => {
    const url = await create();
    await write(url, 'a', 0, 0, 'data');
    assert.equal((await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } })).status, 204);
    const again = await write(url, 'a', 0, 0, 'data');
    checkReceipt(again, { status: 204, offset: 0, next: 4, epoch: 0, seq: 0 });
    // A new write is refused as closed.
    const fresh = await write(url, 'a', 0, 1, 'more');
    await expectError(fresh, 409, 'STREAM_CLOSED');
    assert.equal(fresh.headers.get('stream-closed'), 'true');
});

// The receipt describes the request's own write: Stream-Closed: true only when
// that write closed the stream, not when a later close without bytes did.
test('ext 5.3: a repeat of a write that did not close the stream carries no Stream-Closed, even after a later close', async () => {
    const url = await create();
    const first = await write(url, 'a', 0, 0, 'data');
    checkReceipt(first, { status: 200, offset: 0, next: 4, epoch: 0, seq: 0 });
    assert.equal(first.headers.get('stream-closed'), null, 'the write did not close the stream');
    // Another client closes the stream without appending.
    assert.equal((await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } })).status, 204);
    const again = await write(url, 'a', 0, 0, 'data');
    checkReceipt(again, { status: 204, offset: 0, next: 4, epoch: 0, seq: 0 });
    assert.equal(again.headers.get('stream-closed'), null,
                 'the repeat\'s receipt must match the first answer: the write did not close the stream');
});

// ---------------------------------------------------------------------------
// 5.2 Producer-Digest

test('ext 5.2: a producer write with a correct Producer-Digest applies', { skip: b3sumMissing }, async () => {
    const url = await create();
    const body = 'digest me';
    const res = await write(url, 'd', 0, 0, body, { 'producer-digest': blake3(body) });
    checkReceipt(res, { status: 200, offset: 0, next: 9, epoch: 0, seq: 0 });
    assert.equal(await readAll(url), body);
});

test('ext 5.2: a wrong Producer-Digest answers 400 PRODUCER_DIGEST_MISMATCH and applies nothing', { skip: b3sumMissing }, async () => {
    const url = await create('seed');
    const before = await snapshot(url);
    const res = await write(url, 'd', 0, 0, 'actual body', { 'producer-digest': blake3('another body') });
    await expectError(res, 400, 'PRODUCER_DIGEST_MISMATCH');
    assert.deepEqual(await snapshot(url), before);
    // Nothing holds the key: the right write under it applies as new.
    const ok = await write(url, 'd', 0, 0, 'actual body', { 'producer-digest': blake3('actual body') });
    checkReceipt(ok, { status: 200, offset: 4, next: 15, epoch: 0, seq: 0 });
});

test('ext 5.2: a malformed Producer-Digest (uppercase, 63 digits, 65 digits, not hex) answers 400, nothing applied', { skip: b3sumMissing }, async () => {
    const url = await create('seed');
    const digest = blake3('x');
    const before = await snapshot(url);
    for (const bad of [digest.toUpperCase(), digest.slice(1), digest + '0', 'g'.repeat(64)]) {
        const res = await write(url, 'd', 0, 0, 'x', { 'producer-digest': bad });
        const text = await res.text();
        assert.equal(res.status, 400, `Producer-Digest ${bad}: ${res.status} ${text}`);
        assert.equal(JSON.parse(text).error.code.length > 0, true);
        assert.deepEqual(await snapshot(url), before, `Producer-Digest ${bad} applied`);
    }
});

test('ext 5.2: a repeat with the same Producer-Digest answers 204 with the receipt', { skip: b3sumMissing }, async () => {
    const url = await create();
    const h = { 'producer-digest': blake3('payload') };
    checkReceipt(await write(url, 'd', 0, 0, 'payload', h), { status: 200, offset: 0, next: 7, epoch: 0, seq: 0 });
    const before = await snapshot(url);
    checkReceipt(await write(url, 'd', 0, 0, 'payload', h), { status: 204, offset: 0, next: 7, epoch: 0, seq: 0 });
    assert.deepEqual(await snapshot(url), before);
});

test('ext 5.2: the same key with another Producer-Digest (or none) answers 403 PRODUCER_KEY_CONFLICT, Producer-Outcome: key-conflict, nothing applied', { skip: b3sumMissing }, async () => {
    const url = await create();
    await write(url, 'd', 0, 0, 'payload', { 'producer-digest': blake3('payload') });
    const before = await snapshot(url);
    for (const [what, extra, body] of [
        ['another digest', { 'producer-digest': blake3('other') }, 'other'],
        ['no digest', {}, 'payload'],
    ]) {
        const res = await write(url, 'd', 0, 0, body, extra);
        await expectError(res, 403, 'PRODUCER_KEY_CONFLICT');
        checkProducer403(res, 0, 'key-conflict');
        assert.deepEqual(await snapshot(url), before, what);
    }
    // And a write without a digest is conflicted by a later one with a digest.
    await write(url, 'n', 0, 0, 'plain');
    const withDigest = await write(url, 'n', 0, 0, 'plain', { 'producer-digest': blake3('plain') });
    await expectError(withDigest, 403, 'PRODUCER_KEY_CONFLICT');
    checkProducer403(withDigest, 0, 'key-conflict');
});

test('ext 5.2: a claim\'s identity is held for its epoch: another claim body with another digest gets key-conflict', { skip: b3sumMissing }, async () => {
    const url = await create();
    await write(url, 'c', 0, 0, 'w0');
    await write(url, 'c', 0, 1, 'w1');
    const claim = await write(url, 'c', 1, 0, 'claim-A', { 'producer-digest': blake3('claim-A') });
    assert.equal(claim.status, 200);
    await write(url, 'c', 1, 1, 'after');
    const before = await snapshot(url);
    const rival = await write(url, 'c', 1, 0, 'claim-B', { 'producer-digest': blake3('claim-B') });
    await expectError(rival, 403, 'PRODUCER_KEY_CONFLICT');
    checkProducer403(rival, 1, 'key-conflict');
    assert.deepEqual(await snapshot(url), before);
});

test('ext 5.2 / 5.3: the key is decided before the body: a repeat of an applied JSON write whose body is now invalid still answers 204', async () => {
    const url = await create('', JSON_CT);
    const first = await fetch(url, { method: 'POST', headers: { ...JSON_CT, ...producer('j', 0, 0) }, body: '{"a": 1}' });
    assert.equal(first.status, 200, await first.text());
    const next = offsetNum(first.headers.get('stream-next-offset'));
    const before = await snapshot(url);
    for (const [what, headers, body] of [
        ['invalid JSON', JSON_CT, '{not json'],
        ['another valid body', JSON_CT, '{"b":2}'],
        ['another content type', { 'content-type': 'text/plain' }, 'x'],
    ]) {
        const res = await fetch(url, { method: 'POST', headers: { ...headers, ...producer('j', 0, 0) }, body });
        assert.equal(res.status, 204, `${what}: ${res.status} ${await res.text()}`);
        assert.equal(offsetNum(res.headers.get('stream-next-offset')), next, what);
        assert.deepEqual(await snapshot(url), before, what);
    }
});

test('ext 5.2 / 5.3: a key conflict is decided before the body: another digest with an invalid JSON body answers 403 key-conflict', { skip: b3sumMissing }, async () => {
    const url = await create('', JSON_CT);
    const body = '{"a":1}';
    const first = await fetch(url, { method: 'POST', headers: { ...JSON_CT, ...producer('j', 0, 0), 'producer-digest': blake3(body) }, body });
    assert.equal(first.status, 200);
    const res = await fetch(url, { method: 'POST', body: '{bad',
                                   headers: { ...JSON_CT, ...producer('j', 0, 0), 'producer-digest': blake3('{bad') } });
    await expectError(res, 403, 'PRODUCER_KEY_CONFLICT');
    checkProducer403(res, 0, 'key-conflict');
});

test('ext 5.3: content faults do not change a repeat (204) or a seq gap (409): empty body, no Content-Type, empty JSON array, invalid JSON', async () => {
    const url = await create('', JSON_CT);
    const first = await fetch(url, { method: 'POST', headers: { ...JSON_CT, ...producer('j', 0, 0) }, body: '{"a":1}' });
    assert.equal(first.status, 200);
    const before = await snapshot(url);
    const faults = [
        ['empty body', JSON_CT, undefined],
        ['no Content-Type', {}, new Uint8Array(Buffer.from('{"a":1}'))],
        ['empty JSON array', JSON_CT, '[]'],
        ['invalid JSON', JSON_CT, '{"a":'],
        ['too deep', JSON_CT, '['.repeat(200) + ']'.repeat(200)],
    ];
    for (const [what, headers, body] of faults) {
        const repeat = await fetch(url, { method: 'POST', headers: { ...headers, ...producer('j', 0, 0) }, body });
        assert.equal(repeat.status, 204, `repeat with ${what}: ${repeat.status} ${await repeat.text()}`);
        assert.equal(repeat.headers.get('stream-offset'), '00000000000000000000', what);
        const gap = await fetch(url, { method: 'POST', headers: { ...headers, ...producer('j', 0, 4) }, body });
        await expectError(gap, 409, 'PRODUCER_SEQ_CONFLICT');
        assert.equal(gap.headers.get('producer-expected-seq'), '1', what);
        assert.deepEqual(await snapshot(url), before, what);
    }
    // A new write with a fault is refused by its content (step 5).
    const bad = await fetch(url, { method: 'POST', headers: { ...JSON_CT, ...producer('j', 0, 1) }, body: '{"a":' });
    assert.equal(bad.status, 400);
    await bad.arrayBuffer();
});

test('ext 5.3: a producer write to a missing stream answers 404 whatever its content faults (the stream is step 2, content step 5)', async () => {
    const url = streamUrl('missing');
    for (const [what, headers, body] of [
        ['invalid JSON', JSON_CT, '{bad'],
        ['empty body', OCTET, undefined],
        ['no Content-Type', {}, new Uint8Array([1, 2])],
    ]) {
        const res = await fetch(url, { method: 'POST', headers: { ...headers, ...producer('p', 0, 0) }, body });
        await expectError(res, 404, 'STREAM_NOT_FOUND');
        assert.equal((await fetch(url, { method: 'HEAD' })).status, 404, what);
    }
});

test('ext 5.3: the receipt of a JSON array write spans all its messages, and its repeat reports the same range', async () => {
    const url = await create('[{"x":0}]', JSON_CT);
    const body = '[{"a": 1}, {"b":2}]';
    const res = await fetch(url, { method: 'POST', headers: { ...JSON_CT, ...producer('j', 0, 0) }, body });
    // Stored: {"x":0}\n then {"a":1}\n{"b":2}\n (whitespace removed).
    checkReceipt(res, { status: 200, offset: 8, next: 24, epoch: 0, seq: 0 });
    const again = await fetch(url, { method: 'POST', headers: { ...JSON_CT, ...producer('j', 0, 0) }, body });
    checkReceipt(again, { status: 204, offset: 8, next: 24, epoch: 0, seq: 0 });
});

test('ext 5.3 / 5.8: a repeat of a producer write that carried Stream-Seq answers 204 with its receipt, not a Stream-Seq conflict', async () => {
    const url = await create();
    const h = { 'stream-seq': '0005' };
    checkReceipt(await write(url, 'p', 0, 0, 'ab', h), { status: 200, offset: 0, next: 2, epoch: 0, seq: 0 });
    checkReceipt(await write(url, 'p', 0, 0, 'ab', h), { status: 204, offset: 0, next: 2, epoch: 0, seq: 0 });
    checkReceipt(await write(url, 'p', 0, 1, 'cd', { 'stream-seq': '0006' }), { status: 200, offset: 2, next: 4, epoch: 0, seq: 1 });
    const evicted = await write(url, 'p', 0, 0, 'ab', h);
    assert.equal(evicted.status, 204);
    assert.equal(evicted.headers.get('producer-outcome'), 'receipt-evicted');
    // A new producer write with a stale Stream-Seq is a Stream-Seq conflict.
    const stale = await write(url, 'p', 0, 2, 'ef', { 'stream-seq': '0006' });
    await expectError(stale, 409, 'STREAM_SEQ_CONFLICT');
    assert.equal(stale.headers.get('stream-last-seq'), '0006');
});

// ---------------------------------------------------------------------------
// 5.3 Claims and closed epochs

// Epoch 0 writes seqs 0..2, then epoch 1 claims.
async function claimedStream() {
    const url = await create();
    for (let seq = 0; seq < 3; seq++) {
        assert.equal((await write(url, 'p', 0, seq, `e0s${seq};`)).status, 200);
    }
    return url;
}

test('ext 5.3: a claim (epoch 1, seq 0) after epoch 0 wrote seqs 0..2 answers 200 with Producer-Closed-Epoch: 0 and Producer-Closed-Seq: 2', async () => {
    const url = await claimedStream();
    const claim = await write(url, 'p', 1, 0, 'claim;');
    assert.equal(claim.status, 200);
    assert.equal(claim.headers.get('producer-epoch'), '1');
    assert.equal(claim.headers.get('producer-seq'), '0');
    assert.equal(claim.headers.get('producer-closed-epoch'), '0');
    assert.equal(claim.headers.get('producer-closed-seq'), '2');
    assert.ok(claim.headers.get('stream-offset'), 'a claim has a receipt');
});

test('ext 5.3: a repeat of the claim carries the same Producer-Closed-Epoch and Producer-Closed-Seq', async () => {
    const url = await claimedStream();
    const claim = await write(url, 'p', 1, 0, 'claim;');
    const before = await snapshot(url);
    const again = await write(url, 'p', 1, 0, 'claim;');
    assert.equal(again.status, 204);
    assert.equal(again.headers.get('producer-closed-epoch'), '0');
    assert.equal(again.headers.get('producer-closed-seq'), '2');
    assert.equal(again.headers.get('stream-offset'), claim.headers.get('stream-offset'));
    assert.equal(again.headers.get('stream-next-offset'), claim.headers.get('stream-next-offset'));
    assert.deepEqual(await snapshot(url), before);
});

test('ext 5.3: a claim of a fresh producer (nothing to close) carries no Producer-Closed-Epoch', async () => {
    const url = await create();
    const claim = await write(url, 'fresh', 4, 0, 'x');
    assert.equal(claim.status, 200);
    assert.equal(claim.headers.get('producer-closed-epoch'), null);
    assert.equal(claim.headers.get('producer-closed-seq'), null);
});

test('ext 5.3: a write of the epoch the claim closed answers 403 PRODUCER_EPOCH_CLOSED, epoch-closed;by=claim, with the closure, nothing applied', async () => {
    const url = await claimedStream();
    await write(url, 'p', 1, 0, 'claim;');
    const before = await snapshot(url);
    // A new seq of epoch 0, and a repeat of one that applied: the same answer.
    for (const [seq, body] of [[3, 'e0s3;'], [2, 'e0s2;'], [0, 'e0s0;']]) {
        const res = await write(url, 'p', 0, seq, body);
        await expectError(res, 403, 'PRODUCER_EPOCH_CLOSED');
        checkProducer403(res, 1, 'epoch-closed;by=claim');
        assert.equal(res.headers.get('producer-closed-epoch'), '0', `seq ${seq}`);
        assert.equal(res.headers.get('producer-closed-seq'), '2', `seq ${seq}`);
        assert.deepEqual(await snapshot(url), before, `seq ${seq}`);
    }
});

test('ext 5.3: after a second claim (epoch 2), a write of epoch 0 answers 403 PRODUCER_EPOCH_STALE with stale-epoch', async () => {
    const url = await claimedStream();
    await write(url, 'p', 1, 0, 'claim1;');
    await write(url, 'p', 1, 1, 'e1s1;');
    const claim2 = await write(url, 'p', 2, 0, 'claim2;');
    assert.equal(claim2.status, 200);
    assert.equal(claim2.headers.get('producer-closed-epoch'), '1');
    assert.equal(claim2.headers.get('producer-closed-seq'), '1');
    const before = await snapshot(url);
    const stale = await write(url, 'p', 0, 3, 'e0s3;');
    await expectError(stale, 403, 'PRODUCER_EPOCH_STALE');
    checkProducer403(stale, 2, 'stale-epoch');
    assert.equal(stale.headers.get('producer-closed-epoch'), null, 'stale-epoch says nothing about closure');
    assert.equal(stale.headers.get('producer-closed-seq'), null);
    // Epoch 1 is the one epoch 2's claim closed.
    const closed = await write(url, 'p', 1, 2, 'e1s2;');
    await expectError(closed, 403, 'PRODUCER_EPOCH_CLOSED');
    checkProducer403(closed, 2, 'epoch-closed;by=claim');
    assert.equal(closed.headers.get('producer-closed-epoch'), '1');
    assert.equal(closed.headers.get('producer-closed-seq'), '1');
    assert.deepEqual(await snapshot(url), before);
});

test('ext 5.3: a claim that skips epochs closes the producer\'s epoch; an epoch between them answers stale-epoch', async () => {
    const url = await create();
    await write(url, 'p', 0, 0, 'a');
    await write(url, 'p', 0, 1, 'b');
    const claim = await write(url, 'p', 5, 0, 'c');
    assert.equal(claim.status, 200);
    assert.equal(claim.headers.get('producer-closed-epoch'), '0');
    assert.equal(claim.headers.get('producer-closed-seq'), '1');
    const before = await snapshot(url);
    const between = await write(url, 'p', 3, 0, 'x');
    await expectError(between, 403, 'PRODUCER_EPOCH_STALE');
    checkProducer403(between, 5, 'stale-epoch');
    assert.deepEqual(await snapshot(url), before);
});

test('ext 5.3: a repeat of the claim after later writes of its epoch answers 204 receipt-evicted with the same closure', async () => {
    const url = await claimedStream();
    await write(url, 'p', 1, 0, 'claim;');
    await write(url, 'p', 1, 1, 'e1s1;');
    const before = await snapshot(url);
    const again = await write(url, 'p', 1, 0, 'claim;');
    assert.equal(again.status, 204);
    assert.equal(again.headers.get('producer-outcome'), 'receipt-evicted');
    assert.equal(again.headers.get('producer-closed-epoch'), '0');
    assert.equal(again.headers.get('producer-closed-seq'), '2');
    assert.equal(again.headers.get('producer-seq'), '1');
    assert.deepEqual(await snapshot(url), before);
});

test('ext 5.1 / 5.3: keys hold within one stream incarnation: after delete and recreate the producer is unknown', async () => {
    const url = await create();
    await write(url, 'p', 0, 0, 'a');
    await write(url, 'p', 0, 1, 'b');
    assert.equal((await fetch(url, { method: 'DELETE' })).status, 204);
    const again = await fetch(url, { method: 'PUT', headers: OCTET });
    assert.equal(again.status, 201);
    const gap = await write(url, 'p', 0, 2, 'c');
    await expectError(gap, 409, 'PRODUCER_SEQ_CONFLICT');
    assert.equal(gap.headers.get('producer-expected-seq'), '0');
    // The old key (p, 0, 0) is not a repeat on the new stream: it applies.
    checkReceipt(await write(url, 'p', 0, 0, 'a'), { status: 200, offset: 0, next: 1, epoch: 0, seq: 0 });
});

test('ext 5.3: on a closed stream, a write that would apply answers 409 STREAM_CLOSED, while a producer seq gap keeps its 409 PRODUCER_SEQ_CONFLICT', async () => {
    const url = await create();
    await write(url, 'p', 0, 0, 'a');
    assert.equal((await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } })).status, 204);
    const before = await snapshot(url);
    for (const [seq, epoch] of [[1, 0], [0, 1], [0, 0]]) {
        const res = await write(url, seq === 0 && epoch === 0 ? 'new' : 'p', epoch, seq, 'x');
        await expectError(res, 409, 'STREAM_CLOSED');
        assert.equal(res.headers.get('stream-closed'), 'true');
    }
    // The producer rules (step 3) come before the closed-stream check (step 4).
    const gap = await write(url, 'p', 0, 5, 'x');
    await expectError(gap, 409, 'PRODUCER_SEQ_CONFLICT');
    assert.equal(gap.headers.get('producer-expected-seq'), '1');
    assert.deepEqual(await snapshot(url), before);
});

test('ext 5.2: Producer-Digest is checked last: a write with a wrong digest to a closed stream answers 409 STREAM_CLOSED', { skip: b3sumMissing }, async () => {
    const url = await create('a');
    assert.equal((await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } })).status, 204);
    const res = await write(url, 'p', 0, 0, 'x', { 'producer-digest': blake3('not x') });
    await expectError(res, 409, 'STREAM_CLOSED');
});

test('ext 5.2: a close-only producer write carries the digest of the empty body; a wrong one answers 400 and does not close', { skip: b3sumMissing }, async () => {
    const url = await create('a');
    const close = (digest) => fetch(url, { method: 'POST', headers: { ...producer('p', 0, 0), 'stream-closed': 'true', 'producer-digest': digest } });
    const wrong = await close(blake3('x'));
    await expectError(wrong, 400, 'PRODUCER_DIGEST_MISMATCH');
    assert.equal((await fetch(url, { method: 'HEAD' })).headers.get('stream-closed'), null, 'the refused close closed the stream');
    const ok = await close(blake3(''));
    checkReceipt(ok, { status: 204, offset: 1, next: 1, epoch: 0, seq: 0 });
    assert.equal(ok.headers.get('stream-closed'), 'true');
    const again = await close(blake3(''));
    checkReceipt(again, { status: 204, offset: 1, next: 1, epoch: 0, seq: 0 });
});

test('ext 5.3: every producer 403 carries Producer-Epoch and exactly one Producer-Outcome (raw header lines)', async () => {
    const url = await claimedStream();
    await write(url, 'p', 1, 0, 'claim1;');
    await write(url, 'p', 2, 0, 'claim2;');
    const path = new URL(url).pathname;
    const requests = [
        producer('p', 1, 1),  // closed by claim
        producer('p', 0, 1),  // stale
        producer('p', 2, 0),  // the claim again with another body (no digests): a repeat, not a 403
    ];
    let seen403 = 0;
    for (const headers of requests) {
        const conn = await RawConn.open(srv.leaderPort, srv.leaderHost);
        try {
            await conn.write(rawRequest('POST', path, { headers: { 'Content-Type': 'application/octet-stream', ...headers }, body: 'zz' }));
            const res = await conn.readResponse();
            if (res.status !== 403) continue;
            seen403++;
            const lines = res.rawHeaders.split('\r\n').map((l) => l.toLowerCase());
            assert.equal(lines.filter((l) => l.startsWith('producer-outcome:')).length, 1, res.rawHeaders);
            assert.equal(lines.filter((l) => l.startsWith('producer-epoch:')).length, 1, res.rawHeaders);
        } finally {
            conn.destroy();
        }
    }
    assert.equal(seen403, 2);
});

// ---------------------------------------------------------------------------
// 5.3 Sequence answers

test('ext 5.3: a seq above 0 for an unknown producer answers 409 with Producer-Expected-Seq: 0 and Producer-Received-Seq', async () => {
    const url = await create('seed');
    const before = await snapshot(url);
    const res = await write(url, 'unknown', 0, 3, 'x');
    await expectError(res, 409, 'PRODUCER_SEQ_CONFLICT');
    assert.equal(res.headers.get('producer-expected-seq'), '0');
    assert.equal(res.headers.get('producer-received-seq'), '3');
    assert.deepEqual(await snapshot(url), before);
    // Any epoch: the server holds no state for the producer.
    const other = await write(url, 'unknown2', 7, 1, 'x');
    await expectError(other, 409, 'PRODUCER_SEQ_CONFLICT');
    assert.equal(other.headers.get('producer-expected-seq'), '0');
    assert.equal(other.headers.get('producer-received-seq'), '1');
});

test('ext 5.3: a seq above 0 of an epoch newer than the producer\'s answers 400 with Producer-Expected-Seq: 0', async () => {
    const url = await create();
    await write(url, 'p', 0, 0, 'a');
    await write(url, 'p', 0, 1, 'b');
    const before = await snapshot(url);
    const res = await write(url, 'p', 1, 2, 'c');
    const text = await res.text();
    assert.equal(res.status, 400, text);
    assert.equal(res.headers.get('producer-expected-seq'), '0');
    assert.match(res.headers.get('content-type') ?? '', /^application\/json/);
    assert.deepEqual(await snapshot(url), before);
    // The epoch is not claimed: its seq 0 is still a claim.
    const claim = await write(url, 'p', 1, 0, 'c');
    assert.equal(claim.status, 200);
    assert.equal(claim.headers.get('producer-closed-epoch'), '0');
});

test('ext 5.3: a sequence gap answers 409 PRODUCER_SEQ_CONFLICT with Producer-Expected-Seq and Producer-Received-Seq, nothing applied', async () => {
    const url = await create();
    await write(url, 'p', 0, 0, 'a');
    await write(url, 'p', 0, 1, 'b');
    const before = await snapshot(url);
    const res = await write(url, 'p', 0, 5, 'f');
    await expectError(res, 409, 'PRODUCER_SEQ_CONFLICT');
    assert.equal(res.headers.get('producer-expected-seq'), '2');
    assert.equal(res.headers.get('producer-received-seq'), '5');
    assert.deepEqual(await snapshot(url), before);
    checkReceipt(await write(url, 'p', 0, 2, 'c'), { status: 200, offset: 2, next: 3, epoch: 0, seq: 2 });
});

test('ext 5.3: malformed producer headers (a seq without an epoch, an incomplete set, non-integers, 2^53, an empty id) answer 400, nothing applied', async () => {
    const url = await create('seed');
    const before = await snapshot(url);
    for (const headers of [{ 'producer-id': 'p', 'producer-seq': '0' }, { 'producer-id': 'p', 'producer-epoch': '0' },
                           { 'producer-epoch': '0', 'producer-seq': '0' }, producer('p', 'x', 0), producer('p', 0, '-1'),
                           producer('p', 2 ** 53, 0), producer('p', 0, '9007199254740992'), producer('', 0, 0)]) {
        const res = await fetch(url, { method: 'POST', headers: { ...OCTET, ...headers }, body: 'x' });
        const text = await res.text();
        assert.equal(res.status, 400, `${JSON.stringify(headers)}: ${res.status} ${text}`);
        assert.deepEqual(await snapshot(url), before, JSON.stringify(headers));
    }
});

test('ext 5.3: a producer header or Producer-Digest sent twice answers 400, nothing applied (raw socket)', async () => {
    const url = await create('seed');
    const target = new URL(url).pathname;
    const digest = '3ae7d805f6789a6402acb70ad4096a85a56bf6804eaf25c0493ac697548d30b5';  // BLAKE3("x")
    const base = ['Producer-Id: p', 'Producer-Epoch: 0', 'Producer-Seq: 0'];
    const cases = [
        [...base, 'Producer-Id: p'],
        [...base, 'Producer-Epoch: 0'],
        [...base, 'Producer-Seq: 0'],
        [...base, `Producer-Digest: ${digest}`, `Producer-Digest: ${digest}`],
    ];
    const before = await snapshot(url);
    for (const lines of cases) {
        const conn = await RawConn.open(srv.leaderPort, srv.leaderHost);
        try {
            await conn.write(`POST ${target} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/octet-stream\r\n` +
                             `${lines.join('\r\n')}\r\nContent-Length: 1\r\n\r\nx`);
            const res = await conn.readResponse();
            assert.equal(res.status, 400, `${lines.join(' | ')}: ${res.rawHeaders}`);
        } finally {
            conn.destroy();
        }
        assert.deepEqual(await snapshot(url), before, lines.join(' | '));
    }
    // The write itself is still new.
    assert.equal((await write(url, 'p', 0, 0, 'x')).status, 200);
});

// ---------------------------------------------------------------------------
// 5.8 Stream-Seq conflicts

test('ext 5.8: a Stream-Seq conflict answers 409 STREAM_SEQ_CONFLICT with Stream-Last-Seq as it was sent, nothing applied', async () => {
    const url = await create();
    // Stream-Seq is compared as an opaque string; the value comes back byte for byte.
    const last = 'Batch-0007.b';
    assert.equal((await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': 'Batch-0003' }, body: 'a' })).status, 204);
    assert.equal((await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': last }, body: 'b' })).status, 204);
    const before = await snapshot(url);
    for (const seq of [last, 'Batch-0005', 'Batch-0007.a', 'A']) {
        const res = await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': seq }, body: 'c' });
        await expectError(res, 409, 'STREAM_SEQ_CONFLICT');
        assert.equal(res.headers.get('stream-last-seq'), last, `Stream-Seq ${seq}`);
        assert.deepEqual(await snapshot(url), before, `Stream-Seq ${seq}`);
    }
    // A refused Stream-Seq did not become the last one.
    assert.equal((await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': 'Batch-0007.c' }, body: 'd' })).status, 204);
});

test('ext 5.8: a content-type 409 carries CONTENT_TYPE_MISMATCH and no Stream-Last-Seq, even on a stream that accepted a Stream-Seq', async () => {
    const url = await create();
    assert.equal((await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': '0005' }, body: 'a' })).status, 204);
    const before = await snapshot(url);
    for (const headers of [{ 'content-type': 'text/plain' }, { 'content-type': 'text/plain', 'stream-seq': '0001' },
                           { 'content-type': 'text/plain', 'stream-seq': '0009' }]) {
        const res = await fetch(url, { method: 'POST', headers, body: 'x' });
        await expectError(res, 409, 'CONTENT_TYPE_MISMATCH');
        assert.equal(res.headers.get('stream-last-seq'), null, JSON.stringify(headers));
        assert.deepEqual(await snapshot(url), before);
    }
});

test('ext 5.8: no other 409 carries Stream-Last-Seq (a closed stream, a producer seq conflict)', async () => {
    const url = await create();
    assert.equal((await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': '0005' }, body: 'a' })).status, 204);
    const gap = await write(url, 'p', 0, 4, 'x');
    await expectError(gap, 409, 'PRODUCER_SEQ_CONFLICT');
    assert.equal(gap.headers.get('stream-last-seq'), null, 'producer 409');
    assert.equal((await fetch(url, { method: 'POST', headers: { 'stream-closed': 'true' } })).status, 204);
    const closed = await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': '0009' }, body: 'x' });
    await expectError(closed, 409, 'STREAM_CLOSED');
    assert.equal(closed.headers.get('stream-last-seq'), null, 'closed-stream 409');
});

// ---------------------------------------------------------------------------
// Keys across a restart (durable mode): producer state is part of the stream.

test('ext 5.2 / 5.3: producer state survives a crash and restart (checkpoint and log replay): receipts, closure, identities', { skip: b3sumMissing }, async () => {
    const dur = await startServer({ memory: false, extraArgs: ['--checkpoint-bytes', '65536'] });
    let live = dur;
    try {
        const url = `${dur.url}/bkt-prod/${uniq('dur')}`;
        assert.equal((await fetch(url, { method: 'PUT', headers: OCTET })).status, 201);
        const w = (id, epoch, seq, body, extra = {}) =>
            fetch(url, { method: 'POST', headers: { ...OCTET, ...producer(id, epoch, seq), ...extra }, body });
        // Before the checkpoint: epoch 0 of p, and a claim of epoch 1 with a digest.
        assert.equal((await w('p', 0, 0, 'a')).status, 200);
        assert.equal((await w('p', 0, 1, 'b')).status, 200);
        assert.equal((await w('p', 1, 0, 'claim', { 'producer-digest': blake3('claim') })).status, 200);
        assert.equal((await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': 'k-0001' }, body: 'c' })).status, 204);
        // A large append makes the group write a checkpoint (--checkpoint-bytes).
        assert.equal((await fetch(url, { method: 'POST', headers: OCTET, body: Buffer.alloc(70_000, 0x61) })).status, 204);
        const ckptDir = path.join(dur.dataDir, 'checkpoints');
        for (let i = 0; i < 40 && !(existsSync(ckptDir) && readdirSync(ckptDir).length > 0); i++) await sleep(50);
        // After the checkpoint, replayed from the log: p's newest write, q's write with a digest.
        const newest = await w('p', 1, 1, 'after');
        assert.equal(newest.status, 200);
        const q = await w('q', 0, 0, 'qq', { 'producer-digest': blake3('qq') });
        assert.equal(q.status, 200);
        const before = await snapshot(url);

        live = await dur.crashAndRestart();
        assert.deepEqual(await snapshot(url), before, 'the stream after the restart');
        // The newest write's receipt.
        const again = await w('p', 1, 1, 'after');
        assert.equal(again.status, 204);
        assert.equal(again.headers.get('stream-offset'), newest.headers.get('stream-offset'));
        assert.equal(again.headers.get('stream-next-offset'), newest.headers.get('stream-next-offset'));
        // The claim: its identity and closure.
        const claim = await w('p', 1, 0, 'claim', { 'producer-digest': blake3('claim') });
        assert.equal(claim.status, 204);
        assert.equal(claim.headers.get('producer-outcome'), 'receipt-evicted');
        assert.equal(claim.headers.get('producer-closed-epoch'), '0');
        assert.equal(claim.headers.get('producer-closed-seq'), '1');
        const rival = await w('p', 1, 0, 'rival', { 'producer-digest': blake3('rival') });
        await expectError(rival, 403, 'PRODUCER_KEY_CONFLICT');
        checkProducer403(rival, 1, 'key-conflict');
        const old = await w('p', 0, 2, 'x');
        await expectError(old, 403, 'PRODUCER_EPOCH_CLOSED');
        checkProducer403(old, 1, 'epoch-closed;by=claim');
        assert.equal(old.headers.get('producer-closed-seq'), '1');
        // q's identity: the same digest repeats, another conflicts.
        assert.equal((await w('q', 0, 0, 'qq', { 'producer-digest': blake3('qq') })).status, 204);
        const qConflict = await w('q', 0, 0, 'qq');
        await expectError(qConflict, 403, 'PRODUCER_KEY_CONFLICT');
        // The next seqs follow on.
        checkReceipt(await w('p', 1, 2, 'Z'), { status: 200, offset: offsetNum(before.next), next: offsetNum(before.next) + 1, epoch: 1, seq: 2 });
        // Stream-Seq (5.8) too.
        const seq = await fetch(url, { method: 'POST', headers: { ...OCTET, 'stream-seq': 'k-0001' }, body: 'd' });
        await expectError(seq, 409, 'STREAM_SEQ_CONFLICT');
        assert.equal(seq.headers.get('stream-last-seq'), 'k-0001');
        assert.deepEqual((await snapshot(url)).next, String(offsetNum(before.next) + 1).padStart(20, '0'));
    } finally {
        await live.stop();
    }
});
