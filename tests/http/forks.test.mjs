// Stream forks and soft delete (base protocol 4.2) beyond the upstream
// conformance suite: both URL surfaces, the offset forms a fork accepts,
// error codes, retention under a fork, and the fork relation across kill -9
// and restarts from the WAL and from checkpoints.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { notOnCluster, startServer } from './lib/server.mjs';
import { uniq, expectError, sleep } from './lib/http.mjs';
import { filesUnder } from './lib/files.mjs';

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

const TEXT = { 'content-type': 'text/plain' };
const JSON_CT = { 'content-type': 'application/json' };
const tok = (n) => String(n).padStart(20, '0');

async function put(url, { headers = TEXT, body } = {}) {
    return fetch(url, { method: 'PUT', headers, body });
}

async function forkOf(url, source, headers = {}) {
    return fetch(url, { method: 'PUT', headers: { ...TEXT, 'stream-forked-from': source, ...headers } });
}

async function readAll(url) {
    const res = await fetch(`${url}?offset=-1`);
    return { status: res.status, text: await res.text(), headers: res.headers };
}

test('base 4.2: a fork on either URL surface names its source on either surface', async () => {
    const v1Path = `/v1/stream/${uniq('src')}`;
    const bucketPath = `/bkt-forks/${uniq('src')}`;
    assert.equal((await put(srv.url + v1Path, { body: 'v1-bytes|' })).status, 201);
    assert.equal((await put(srv.url + bucketPath, { body: 'bucket-bytes|' })).status, 201);

    const intoBucket = `${srv.url}/bkt-forks/${uniq('fork')}`;
    assert.equal((await forkOf(intoBucket, v1Path)).status, 201);
    const intoV1 = `${srv.url}/v1/stream/${uniq('fork')}`;
    // An absolute URL of this server names the same path.
    assert.equal((await forkOf(intoV1, srv.url + bucketPath)).status, 201);
    await fetch(intoBucket, { method: 'POST', headers: TEXT, body: 'own' });
    assert.equal((await readAll(intoBucket)).text, 'v1-bytes|own');
    assert.equal((await readAll(intoV1)).text, 'bucket-bytes|');
});

test('base 4.2: Stream-Fork-Offset takes our offsets and the reference server form', async () => {
    const source = `/v1/stream/${uniq('src')}`;
    assert.equal((await put(srv.url + source, { body: 'abcdefgh' })).status, 201);
    const a = `${srv.url}/v1/stream/${uniq('f')}`;
    assert.equal((await forkOf(a, source, { 'stream-fork-offset': tok(3) })).status, 201);
    assert.equal((await readAll(a)).text, 'abc');
    const b = `${srv.url}/v1/stream/${uniq('f')}`;
    assert.equal((await forkOf(b, source, { 'stream-fork-offset': '0000000000000000_0000000000000005' })).status, 201);
    assert.equal((await readAll(b)).text, 'abcde');
    const c = `${srv.url}/v1/stream/${uniq('f')}`;
    await expectError(await forkOf(c, source, { 'stream-fork-offset': '12' }), 400, 'INVALID_OFFSET');
    await expectError(await forkOf(c, source, { 'stream-fork-offset': tok(9) }), 400, 'INVALID_OFFSET');
    await expectError(await forkOf(c, source, { 'stream-fork-offset': tok(8), 'stream-fork-sub-offset': '1' }),
                      400, 'INVALID_OFFSET');
    await expectError(await forkOf(c, source, { 'stream-fork-sub-offset': '1' }), 400, 'INVALID_HEADER');
    await expectError(await put(c, { headers: { ...TEXT, 'stream-fork-offset': tok(0) } }), 400, 'INVALID_HEADER');
    await expectError(await forkOf(c, '/v1/stream/'), 400, 'INVALID_HEADER');
    await expectError(await forkOf(c, `/v1/stream/${uniq('missing')}`), 404, 'STREAM_NOT_FOUND');
    // Nothing was created by the refusals.
    assert.equal((await fetch(c, { method: 'HEAD' })).status, 404);
});

test('base 4.2: a soft-deleted stream answers 410, its URL 409 STREAM_SOFT_DELETED, until its last fork goes', async () => {
    const source = `${srv.url}/bkt-forks/${uniq('src')}`;
    const fork = `${srv.url}/bkt-forks/${uniq('fork')}`;
    assert.equal((await put(source, { body: 'kept' })).status, 201);
    assert.equal((await forkOf(fork, new URL(source).pathname)).status, 201);
    assert.equal((await fetch(source, { method: 'DELETE' })).status, 204);
    await expectError(await fetch(source), 410, 'STREAM_GONE');
    await expectError(await fetch(`${source}?offset=-1`), 410, 'STREAM_GONE');
    await expectError(await fetch(source, { method: 'POST', headers: TEXT, body: 'x' }), 410, 'STREAM_GONE');
    await expectError(await fetch(source, { method: 'DELETE' }), 410, 'STREAM_GONE');
    await expectError(await put(source, { body: 'again' }), 409, 'STREAM_SOFT_DELETED');
    await expectError(await forkOf(`${srv.url}/bkt-forks/${uniq('late')}`, new URL(source).pathname), 409,
                      'STREAM_SOFT_DELETED');
    assert.equal((await readAll(fork)).text, 'kept');
    assert.equal((await fetch(fork, { method: 'DELETE' })).status, 204);
    const deadline = Date.now() + 5000;
    while ((await fetch(source, { method: 'HEAD' })).status !== 404) {
        assert.ok(Date.now() < deadline, 'the soft-deleted source was not collected');
        await sleep(20);
    }
    assert.equal((await put(source, { body: 'new life' })).status, 201);
});

test('base 4.2, 7.1: a JSON fork reads as one array across the fork point; the bucketed surface as NDJSON', async () => {
    const source = `/v1/stream/${uniq('json')}`;
    assert.equal((await put(srv.url + source, { headers: JSON_CT, body: '[{"a":1},{"b":2}]' })).status, 201);
    const v1Fork = `${srv.url}/v1/stream/${uniq('jf')}`;
    assert.equal((await forkOf(v1Fork, source, { 'content-type': 'application/json' })).status, 201);
    await fetch(v1Fork, { method: 'POST', headers: JSON_CT, body: '{"c":3}' });
    assert.deepEqual(JSON.parse((await readAll(v1Fork)).text), [{ a: 1 }, { b: 2 }, { c: 3 }]);
    const bucketFork = `${srv.url}/bkt-forks/${uniq('jf')}`;
    const res = await fetch(bucketFork, { method: 'PUT', headers: { 'stream-forked-from': source } });
    assert.equal(res.status, 201);
    assert.equal(res.headers.get('content-type'), 'application/json');
    assert.equal((await readAll(bucketFork)).text, '{"a":1}\n{"b":2}\n');
});

test('base 4.2, ext 2.2: bytes a fork inherits that its source retained away answer 410', async () => {
    const source = `${srv.url}/bkt-forks/${uniq('ret')}`;
    assert.equal((await put(source, { body: 'old-bytes|' })).status, 201);
    const fork = `${srv.url}/bkt-forks/${uniq('retf')}`;
    assert.equal((await forkOf(fork, new URL(source).pathname)).status, 201);
    const at = tok(10);
    assert.equal((await fetch(`${source}/snapshot/${at}`, { method: 'PUT', headers: TEXT, body: 'summary' })).status, 204);
    assert.equal((await fetch(`${source}/retention/${at}`, { method: 'PUT' })).status, 204);
    await expectError(await fetch(`${fork}?offset=-1`), 410, 'STREAM_GONE');
    // The fork's own bytes, past its fork point, still read.
    await fetch(fork, { method: 'POST', headers: TEXT, body: 'own' });
    const own = await fetch(`${fork}?offset=${at}`);
    assert.equal(own.status, 200);
    assert.equal(await own.text(), 'own');
});

// Of the finished checkpoints only (a `.tmp` one is renamed when done).
// filesUnder leaves out a file removed between the listing and its stat: a
// group prunes its older checkpoints when it writes a new one.
function newestCheckpointTime(dir) {
    return Math.max(0, ...filesUnder(dir).filter((f) => f.path.endsWith('.ckpt')).map((f) => f.mtimeMs));
}

test('base 4.2: forks, soft-deleted sources and their collection survive kill -9, from the WAL and from checkpoints',
     { skip: notOnCluster('restarts one node on a data dir the test owns') }, async () => {
    const dataDir = mkdtempSync(path.join(os.tmpdir(), 'dstream-forks-'));
    let dur = await startServer({ memory: false, dataDir });
    try {
        const l0 = `/bkt-forks/${uniq('l0')}`;
        const l1 = `/bkt-forks/${uniq('l1')}`;
        const l2 = `/v1/stream/${uniq('l2')}`;
        const big = 'x'.repeat(100_000);
        assert.equal((await put(dur.url + l0, { body: 'A' + big })).status, 201);
        assert.equal((await forkOf(dur.url + l1, l0)).status, 201);
        await fetch(dur.url + l1, { method: 'POST', headers: TEXT, body: 'B' });
        assert.equal((await forkOf(dur.url + l2, l1)).status, 201);
        await fetch(dur.url + l2, { method: 'POST', headers: TEXT, body: 'C' });
        assert.equal((await fetch(dur.url + l0, { method: 'DELETE' })).status, 204);
        assert.equal((await fetch(dur.url + l1, { method: 'DELETE' })).status, 204);

        const check = async (when) => {
            assert.equal((await fetch(dur.url + l0, { method: 'HEAD' })).status, 410, `${when}: l0`);
            assert.equal((await fetch(dur.url + l1, { method: 'HEAD' })).status, 410, `${when}: l1`);
            const all = await readAll(dur.url + l2);
            assert.equal(all.status, 200, when);
            assert.equal(all.text, 'A' + big + 'BC', `${when}: the fork's bytes`);
            await expectError(await put(dur.url + l0, { body: 'z' }), 409, 'STREAM_SOFT_DELETED');
        };
        await check('before the crash');
        dur = await dur.crashAndRestart();
        await check('after kill -9 (WAL replay)');

        // An idle checkpoint (the sweep runs every 5 s), then another crash.
        const t0 = Date.now();
        const ckptDir = path.join(dur.dataDir, 'checkpoints');
        while (newestCheckpointTime(ckptDir) <= t0) {
            assert.ok(Date.now() < t0 + 15_000, 'no checkpoint within 15 s');
            await sleep(100);
        }
        await sleep(500);
        dur = await dur.crashAndRestart();
        await check('after a checkpoint and kill -9');

        // The last fork goes: the chain is collected, and that survives too.
        assert.equal((await fetch(dur.url + l2, { method: 'DELETE' })).status, 204);
        const deadline = Date.now() + 5000;
        while ((await fetch(dur.url + l0, { method: 'HEAD' })).status !== 404) {
            assert.ok(Date.now() < deadline, 'the chain was not collected');
            await sleep(20);
        }
        dur = await dur.crashAndRestart();
        for (const p of [l0, l1, l2]) assert.equal((await fetch(dur.url + p, { method: 'HEAD' })).status, 404, p);
        assert.equal((await put(dur.url + l0, { body: 'again' })).status, 201);
    } finally {
        await dur.stop();
        rmSync(dataDir, { recursive: true, force: true });
    }
});
