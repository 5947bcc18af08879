// Backups and restores of a 3-node cluster (docs/operations.md, "Backups
// and restores", "In a cluster"): given the admin listener of a node that
// does not lead every group, `backup create` backs up every group from its
// leader to an s3:// location, and `restore`, given another node's, rewinds
// every group through its log (each on its leader), so that every replica
// serves the same bytes under the same new token.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';

import { append, createStream, requestRetrying, s3FromEnv, serverBinary, startCluster } from './lib/cluster.mjs';

const bin = serverBinary();
let cluster;
after(async () => { await cluster?.stop(); });

function dstream(...args) {
    return new Promise((resolve) => {
        const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => { stdout += d; });
        child.stderr.on('data', (d) => { stderr += d; });
        child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
}

function ok(r, what) {
    assert.equal(r.code, 0, `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r;
}

// A replica's own answer (a long-poll read, which a follower serves once it
// caught up with its leader): its token and bytes.
async function local(node, streamPath) {
    const res = await fetch(`${node.url}${streamPath}?offset=-1&live=long-poll&timeout_ms=200`, { redirect: 'manual' });
    return { status: res.status, token: res.headers.get('stream-incarnation'), body: Buffer.from(await res.arrayBuffer()).toString() };
}

async function headOf(streamPath) {
    const { res } = await requestRetrying(cluster, null, streamPath, { method: 'HEAD' });
    return {
        status: res.status,
        token: res.headers.get('stream-incarnation'),
        previous: res.headers.get('stream-previous-incarnation'),
        inherited: res.headers.get('stream-inherited-offset'),
    };
}

test('a cluster backs up every group from its leader and restores through every group\'s log', async () => {
    cluster = await startCluster({ nodes: 3, groups: 4, admin: true, logLevel: 'info' });
    await cluster.waitReady();
    const paths = Array.from({ length: 10 }, (_, i) => `/bk-cluster/s-${i}`);
    for (const [i, p] of paths.entries()) {
        assert.equal((await createStream(cluster, null, p)).res.status, 201);
        assert.equal((await append(cluster, null, p, `before-${i};`)).res.status, 204);
    }
    const before = new Map();
    for (const p of paths) before.set(p, await headOf(p));

    // Each group's leader, and a node to ask that does not lead every group
    // (the one that leads the fewest), so that some group's work must go to
    // another node's admin listener.
    const leaders = [];
    for (let g = 0; g < 4; g++) leaders.push((await cluster.leaderOf(g)).node);
    const ask = [...cluster.nodes].sort((a, b) =>
        leaders.filter((n) => n === a).length - leaders.filter((n) => n === b).length);
    assert.ok(leaders.some((n) => n !== ask[0]));

    const s3 = s3FromEnv();
    const location = `s3://${s3.bucket}/${cluster.s3.prefix}-backup`;
    const created = ok(await dstream('backup', 'create', ask[0].admin, '--to', location), 'backup create');
    assert.match(created.stdout.trim(), /^[0-9a-f]{32}$/);
    ok(await dstream('backup', 'verify', location, '--s3-endpoint', s3.endpoint), 'backup verify');
    // Each group from its leader.
    for (const [g, leader] of leaders.entries()) {
        assert.match(leader.log(1 << 20), new RegExp(`backup: group ${g} at index`), `group ${g} by its leader, node ${leader.id}`);
    }

    for (const [i, p] of paths.entries()) {
        assert.equal((await append(cluster, null, p, `after-${i};`)).res.status, 204);
    }
    assert.equal((await createStream(cluster, null, '/bk-cluster/later')).res.status, 201);

    // Another node's admin listener: each group's restore goes to its leader.
    const restored = ok(await dstream('restore', ask[1].admin, '--from', location, '--json'), 'restore');
    const report = JSON.parse(restored.stdout);
    for (const [g, leader] of leaders.entries()) {
        assert.match(leader.log(1 << 20), new RegExp(`restore: group ${g} restored from`), `group ${g} by its leader, node ${leader.id}`);
    }
    assert.equal(report.groups.length, 4);
    assert.ok(report.groups.every((g) => !g.already_restored));

    for (const [i, p] of paths.entries()) {
        const h = await headOf(p);
        assert.notEqual(h.token, before.get(p).token, `${p}: a new token`);
        assert.equal(h.previous, before.get(p).token, `${p}: Stream-Previous-Incarnation`);
        assert.equal(Number(h.inherited), `before-${i};`.length, `${p}: Stream-Inherited-Offset`);
        // Every replica applied the same rewrite: the same bytes under the same token.
        for (const node of cluster.nodes) {
            const mine = await local(node, p);
            assert.equal(mine.status, 200, `${p} on node ${node.id}`);
            assert.equal(mine.body, `before-${i};`, `${p} on node ${node.id}: bytes`);
            assert.equal(mine.token, h.token, `${p} on node ${node.id}: token`);
        }
    }
    assert.equal((await headOf('/bk-cluster/later')).status, 404, 'a stream created after the backup is gone');

    const again = JSON.parse(ok(await dstream('restore', ask[2].admin, '--from', location, '--json'), 'restore again').stdout);
    assert.ok(again.groups.every((g) => g.already_restored), 'a repeated restore changes nothing');
});
