// Forks (base protocol 4.2) whose source and fork are in groups led by
// different nodes of a 3-node cluster: the fork's leader reads the source
// from its own replica once caught up with the source's leader, and the
// source's leader proposes the fork's reference for it (a forwarded
// proposal). A byte fork at an offset and a JSON fork at a sub-offset read
// alike through every node; a soft-deleted source answers 410 and its URL 409
// until the fork goes, and then, the fork's release having gone to the
// source's leader, is collected and can be created again. With 5 nodes and 3
// replicas, the same where the fork's leader holds no replica of the
// source's group (it asks a node that does).
//
//   tests/s3/with_s3rver.sh node --test tests/cluster/forks.test.mjs   (DSTREAM_BIN set)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { uniq } from '../http/lib/http.mjs';
import { readAll, requestRetrying, sleep, startCluster } from './lib/cluster.mjs';

const TEXT = { 'content-type': 'text/plain' };
const JSON_CT = { 'content-type': 'application/json' };
const tok = (n) => String(n).padStart(20, '0');

describe('forks across groups led by different nodes', () => {
    let c;
    before(async () => {
        c = await startCluster({ nodes: 3, replicas: 3, groups: 8 });
        await c.waitReady(30_000);
        // One node may have won every election: killed and restarted, it
        // leaves some groups to the others.
        for (let attempt = 0; attempt < 4; attempt++) {
            const leaders = new Set();
            for (let g = 0; g < 8; g++) leaders.add((await c.leaderOf(g)).id);
            if (leaders.size >= 2) break;
            const only = c.node([...leaders][0]);
            await only.kill9();
            for (let g = 0; g < 8; g++) await c.leaderOf(g);
            await only.restart();
            await c.waitReady(30_000);
        }
    });
    after(async () => { await c?.stop(); });

    const send = (path, init) => requestRetrying(c, null, path, init);

    // A source path and a fork path whose groups' leaders are different nodes.
    async function apart(prefix) {
        const source = `/cluster/${uniq(`${prefix}-src`)}`;
        const sourceLeader = await c.leaderOf(await c.groupOf(source));
        for (let i = 0; i < 64; i++) {
            const fork = `/cluster/${uniq(`${prefix}-fork`)}`;
            const forkLeader = await c.leaderOf(await c.groupOf(fork));
            if (forkLeader.id !== sourceLeader.id) return { source, fork, sourceLeader, forkLeader };
        }
        throw new Error('no fork path whose group another node leads');
    }

    test('a byte fork at an offset inherits the source\'s bytes and reads alike through every node', async () => {
        const p = await apart('bytes');
        const created = await send(p.source, { method: 'PUT', headers: TEXT, body: 'abcdef' });
        assert.equal(created.res.status, 201, `PUT source: ${created.res.status} ${created.text}`);
        const forked = await send(p.fork, { method: 'PUT', headers: { ...TEXT, 'stream-forked-from': p.source,
                                                                        'stream-fork-offset': tok(4) } });
        assert.equal(forked.res.status, 201, `PUT fork (source led by node ${p.sourceLeader.id}, fork by node ` +
                                             `${p.forkLeader.id}): ${forked.res.status} ${forked.text}`);
        const appended = await send(p.fork, { method: 'POST', headers: TEXT, body: 'XY' });
        assert.equal(appended.res.status, 204, `POST fork: ${appended.res.status} ${appended.text}`);
        for (const n of c.nodes) {
            assert.equal((await readAll(n, p.fork)).toString(), 'abcdXY', `the fork read through node ${n.id}`);
            assert.equal((await readAll(n, p.source)).toString(), 'abcdef', `the source read through node ${n.id}`);
        }
    });

    test('a JSON fork at a sub-offset counts the source\'s messages on the fork leader\'s replica', async () => {
        const p = await apart('json');
        const created = await send(p.source, { method: 'PUT', headers: JSON_CT, body: '[{"a":1},{"b":2},{"c":3}]' });
        assert.equal(created.res.status, 201, `PUT source: ${created.res.status} ${created.text}`);
        const forked = await send(p.fork, { method: 'PUT', headers: { ...JSON_CT, 'stream-forked-from': p.source,
                                                                        'stream-fork-offset': tok(0),
                                                                        'stream-fork-sub-offset': '2' } });
        assert.equal(forked.res.status, 201, `PUT fork: ${forked.res.status} ${forked.text}`);
        // The bucketed surface reads a JSON stream as NDJSON.
        const messages = (text) => text.split('\n').filter((l) => l !== '').map((l) => JSON.parse(l));
        for (const n of c.nodes) {
            assert.deepEqual(messages((await readAll(n, p.fork)).toString()), [{ a: 1 }, { b: 2 }],
                             `the fork read through node ${n.id}`);
        }
    });

    test('a soft-deleted source is kept for its fork, and collected once the fork is deleted', async () => {
        const p = await apart('soft');
        assert.equal((await send(p.source, { method: 'PUT', headers: TEXT, body: 'kept' })).res.status, 201);
        const forked = await send(p.fork, { method: 'PUT', headers: { ...TEXT, 'stream-forked-from': p.source } });
        assert.equal(forked.res.status, 201, `PUT fork: ${forked.res.status} ${forked.text}`);
        assert.equal((await send(p.source, { method: 'DELETE' })).res.status, 204);
        const again = await send(p.source, { method: 'PUT', headers: TEXT, body: 'again' });
        assert.equal(again.res.status, 409, `PUT on a soft-deleted source: ${again.res.status} ${again.text}`);
        assert.equal((await readAll(p.forkLeader.node, p.fork)).toString(), 'kept');
        assert.equal((await send(p.fork, { method: 'DELETE' })).res.status, 204);
        const deadline = Date.now() + 10_000;
        while (true) {
            const head = await send(p.source, { method: 'HEAD' });
            if (head.res.status === 404) break;
            assert.ok(Date.now() < deadline, `the soft-deleted source was not collected: HEAD ${head.res.status}`);
            await sleep(50);
        }
        const reborn = await send(p.source, { method: 'PUT', headers: TEXT, body: 'new life' });
        assert.equal(reborn.res.status, 201, `PUT after the collection: ${reborn.res.status} ${reborn.text}`);
    });
});

describe('5 nodes, 3 replicas: a fork whose leader holds no replica of its source\'s group', () => {
    let c;
    before(async () => {
        c = await startCluster({ nodes: 5, replicas: 3, groups: 8 });
        await c.waitReady(30_000);
    });
    after(async () => { await c?.stop(); });

    const send = (path, init) => requestRetrying(c, null, path, init);
    const hosts = async (node, group) => (await node.status()).groups.some((g) => g.group === group);

    test('created, read alike through every node, and its source collected after it', async () => {
        let source;
        let fork;
        let forkLeader;
        for (let i = 0; i < 64 && !fork; i++) {
            const sourceCandidate = `/cluster/${uniq('far-src')}`;
            const candidate = `/cluster/${uniq('far-fork')}`;
            const l = await c.leaderOf(await c.groupOf(candidate));
            if (!(await hosts(l.node, await c.groupOf(sourceCandidate)))) {
                source = sourceCandidate;
                fork = candidate;
                forkLeader = l;
            }
        }
        assert.ok(fork, 'no fork path whose leader holds no replica of the source\'s group');
        assert.equal((await send(source, { method: 'PUT', headers: TEXT, body: 'abcdef' })).res.status, 201);
        const forked = await send(fork, { method: 'PUT', headers: { ...TEXT, 'stream-forked-from': source,
                                                                      'stream-fork-offset': tok(4) } });
        assert.equal(forked.res.status, 201, `PUT fork on node ${forkLeader.id}: ${forked.res.status} ${forked.text}`);
        assert.equal((await send(fork, { method: 'POST', headers: TEXT, body: 'XY' })).res.status, 204);
        for (const n of c.nodes) {
            assert.equal((await readAll(n, fork)).toString(), 'abcdXY', `the fork read through node ${n.id}`);
        }
        assert.equal((await send(source, { method: 'DELETE' })).res.status, 204);
        assert.equal((await send(source, { method: 'PUT', headers: TEXT, body: 'again' })).res.status, 409);
        assert.equal((await readAll(forkLeader.node, fork)).toString(), 'abcdXY');
        assert.equal((await send(fork, { method: 'DELETE' })).res.status, 204);
        const deadline = Date.now() + 10_000;
        while ((await send(source, { method: 'HEAD' })).res.status !== 404) {
            assert.ok(Date.now() < deadline, 'the soft-deleted source was not collected');
            await sleep(50);
        }
        assert.equal((await send(source, { method: 'PUT', headers: TEXT, body: 'new life' })).res.status, 201);
    });
});
