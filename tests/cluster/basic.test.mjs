// The cluster's routing and replication in a steady state (no faults):
//   3 nodes, 3 replicas: ready; /__ursula/cluster agrees on each group's
//   leader and term; a write to a follower is answered 307 (before its body
//   is read) with Location on the leader's http address and the three
//   x-ursula-raft-* headers, and followed it creates and appends; a
//   consistency=leader read through any node returns every acknowledged
//   byte; each node's own copy (live reads, served locally) converges to the
//   same bytes; a follower serves a catch-up read ending below its tail as
//   it is, and one ending at its tail once it caught up with the leader (an
//   append the leader acknowledged is in the follower's next read); every answer carries Ursula-Cluster-Id; a SIGTERM of a leader
//   hands its groups over before it exits; the dstream client commands
//   follow the redirects; a sliding TTL that reads through the leader renew
//   keeps the stream alive through a follower.
//   5 nodes, 3 replicas: each group on exactly its 3 voters; a node hosting
//   no replica of a group redirects naming only x-ursula-raft-group.
//
//   tests/s3/with_s3rver.sh node --test tests/cluster/basic.test.mjs   (DSTREAM_BIN set)
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { promisify } from 'node:util';

import { RawConn, rawRequest, uniq } from '../http/lib/http.mjs';
import { append, createStream, readAll, readLocal, serverBinary, sleep, startCluster } from './lib/cluster.mjs';

const CLUSTER_ID = 'test-cluster';
const GROUPS = 8;
const bucketPath = (name) => `/cluster/${name}`;

// Checks a 307 of a node that is not the leader: status, Location on the
// leader's http address with the same path and query, and the raft headers.
function checkRedirect(res, { leader, group, term, pathAndQuery }, what) {
    const h = (n) => res.headers.get(n);
    assert.equal(res.status, 307, `${what}: status`);
    assert.equal(h('location'), `http://${leader.http}${pathAndQuery}`, `${what}: Location`);
    assert.equal(h('x-ursula-raft-leader-id'), String(leader.id), `${what}: x-ursula-raft-leader-id`);
    assert.equal(h('x-ursula-raft-group'), String(group), `${what}: x-ursula-raft-group`);
    assert.equal(h('x-ursula-raft-term'), String(term), `${what}: x-ursula-raft-term`);
    assert.equal(h('ursula-cluster-id'), CLUSTER_ID, `${what}: Ursula-Cluster-Id`);
}

describe('3 nodes, 3 replicas', () => {
    let c;
    before(async () => {
        c = await startCluster({ nodes: 3, replicas: 3, groups: GROUPS, clusterId: CLUSTER_ID });
        await c.waitReady(30_000);
    });
    after(async () => { await c?.stop(); });

    // A stream whose group and leader are known, and a follower of it.
    async function placed(prefix) {
        const path = bucketPath(uniq(prefix));
        const group = await c.groupOf(path);
        const l = await c.leaderOf(group);
        const follower = c.nodes.find((n) => n.id !== l.id);
        return { path, group, leader: l.node, follower, term: l.term };
    }

    test('dstream cluster status: every group with its leader and term, every replica\'s commit/applied, as JSON and as a table', async () => {
        const run = promisify(execFile);
        const { stdout } = await run(serverBinary(), ['cluster', 'status', c.nodes[1].url, '--json']);
        const status = JSON.parse(stdout);
        assert.equal(status.cluster_id, CLUSTER_ID);
        assert.deepEqual(status.nodes.map((n) => n.node), c.nodes.map((n) => n.id));
        for (const n of status.nodes) {
            assert.equal(n.status.groups.length, GROUPS, `node ${n.node} lists every group it hosts`);
            for (const g of n.status.groups) {
                assert.ok(g.commit >= 1 && g.applied >= 1, `node ${n.node} group ${g.group}: ${JSON.stringify(g)}`);
            }
        }
        const table = (await run(serverBinary(), ['cluster', 'status', c.nodes[0].url])).stdout;
        for (let g = 0; g < GROUPS; g++) {
            const l = await c.leaderOf(g);
            const row = table.split('\n').find((line) => line.trim().startsWith(`${g} `));
            assert.ok(row, `group ${g} in:\n${table}`);
            const [, leader, term] = row.trim().split(/\s+/);
            assert.equal(Number(leader), l.id, `group ${g}'s leader in:\n${table}`);
            assert.equal(Number(term), l.term, `group ${g}'s term in:\n${table}`);
        }
    });

    test('every node answers /__ursula/ready 200 with Ursula-Cluster-Id', async () => {
        for (const n of c.nodes) {
            const res = await fetch(`${n.url}/__ursula/ready`);
            await res.arrayBuffer();
            assert.equal(res.status, 200, `node ${n.id} ready`);
            assert.equal(res.headers.get('ursula-cluster-id'), CLUSTER_ID, `node ${n.id} Ursula-Cluster-Id`);
        }
    });

    test('/__ursula/cluster: each node hosts every group with voters [1,2,3]; one leader per group that all name at one term; peers connected', async () => {
        // Let every group settle first (the nodes may still learn leaders).
        for (let g = 0; g < GROUPS; g++) await c.leaderOf(g);
        const statuses = await Promise.all(c.nodes.map((n) => n.status()));
        for (const [i, st] of statuses.entries()) {
            const n = c.nodes[i];
            assert.equal(st.cluster_id, CLUSTER_ID, `node ${n.id} cluster_id`);
            assert.equal(st.node, n.id, `node ${n.id} names itself`);
            assert.deepEqual(st.groups.map((x) => x.group).sort((a, b) => a - b),
                             Array.from({ length: GROUPS }, (_, g) => g), `node ${n.id} groups`);
            for (const x of st.groups) {
                assert.deepEqual([...x.voters].sort(), [1, 2, 3], `node ${n.id} group ${x.group} voters`);
                assert.ok(['leader', 'follower', 'candidate'].includes(x.role), `role ${x.role}`);
                assert.ok(Number.isInteger(x.commit) && Number.isInteger(x.applied) && x.applied <= x.commit,
                          `node ${n.id} group ${x.group}: commit ${x.commit} applied ${x.applied}`);
            }
        }
        for (let g = 0; g < GROUPS; g++) {
            const rows = statuses.map((st) => st.groups.find((x) => x.group === g));
            const what = `group ${g}: ${JSON.stringify(rows)}`;
            assert.equal(new Set(rows.map((r) => r.term)).size, 1, `one term, ${what}`);
            assert.equal(new Set(rows.map((r) => r.leader)).size, 1, `one leader, ${what}`);
            const leaderId = rows[0].leader;
            assert.ok([1, 2, 3].includes(leaderId), what);
            rows.forEach((r, i) => {
                assert.equal(r.role, c.nodes[i].id === leaderId ? 'leader' : 'follower', `node ${c.nodes[i].id} role, ${what}`);
            });
        }
        // Every node lists every node with its http address, and each other
        // one as connected.
        for (const [i, st] of statuses.entries()) {
            const n = c.nodes[i];
            assert.ok(Array.isArray(st.nodes), `node ${n.id}: /__ursula/cluster has no "nodes" array: ${JSON.stringify(st)}`);
            assert.deepEqual(st.nodes.map((m) => m.node), c.nodes.map((m) => m.id), `node ${n.id} nodes`);
            for (const m of st.nodes) {
                const other = c.nodes.find((x) => x.id === m.node);
                assert.equal(m.http, other.url.replace('http://', ''), `node ${n.id}: node ${m.node}'s http`);
                if (m.node !== n.id) assert.equal(m.connected, true, `node ${n.id} to node ${m.node}: ${JSON.stringify(st.nodes)}`);
            }
        }
    });

    test('a write to a follower is answered 307 to the leader, before its body is read, with the x-ursula-raft-* headers', async () => {
        const s = await placed('redirect');
        const res = await fetch(s.follower.url + s.path, { method: 'PUT', redirect: 'manual',
                                                           headers: { 'content-type': 'application/octet-stream' } });
        await res.arrayBuffer();
        checkRedirect(res, { ...s, pathAndQuery: s.path }, `PUT to follower ${s.follower.id}`);

        // The head alone, a body of 100000 bytes announced and never sent:
        // the answer comes anyway.
        const conn = await RawConn.open(s.follower.httpPort, s.follower.httpHost);
        try {
            await conn.write(rawRequest('POST', s.path, {
                host: s.follower.http,
                headers: { 'content-type': 'application/octet-stream', 'content-length': '100000' },
            }));
            const r = await conn.readResponse({ ms: 3000 });
            assert.equal(r.status, 307, `POST with its body unsent: ${r.rawHeaders}`);
            assert.equal(r.headers.location, `http://${s.leader.http}${s.path}`, r.rawHeaders);
            assert.equal(r.headers['x-ursula-raft-group'], String(s.group), r.rawHeaders);
            assert.equal(r.headers['x-ursula-raft-leader-id'], String(s.leader.id), r.rawHeaders);
        } finally {
            conn.destroy();
        }
    });

    test('create and appends through a follower, following the redirects, are acknowledged; a consistency=leader read through any node returns every acknowledged byte', async () => {
        const s = await placed('follow');
        const created = await fetch(s.follower.url + s.path, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' } });
        await created.arrayBuffer();
        assert.equal(created.status, 201, 'PUT through a follower');
        assert.equal(created.headers.get('ursula-cluster-id'), CLUSTER_ID);
        let expected = '';
        for (let i = 0; i < 20; i++) {
            const body = `b${i}-${'x'.repeat(i)};`;
            const via = c.nodes[i % 3];
            const res = await fetch(via.url + s.path, { method: 'POST', body,
                                                        headers: { 'content-type': 'application/octet-stream' } });
            const text = await res.text();
            assert.ok(res.status >= 200 && res.status < 300, `append ${i} through node ${via.id}: ${res.status} ${text}`);
            assert.equal(res.headers.get('ursula-cluster-id'), CLUSTER_ID, `append ${i}: Ursula-Cluster-Id`);
            expected += body;
        }
        for (const n of c.nodes) {
            const got = (await readAll(n, s.path, { query: 'consistency=leader' })).toString();
            assert.equal(got, expected, `consistency=leader read through node ${n.id}`);
        }
        // A follower redirects it, query and all.
        const q = `${s.path}?offset=-1&consistency=leader`;
        const res = await fetch(s.follower.url + q, { redirect: 'manual' });
        await res.arrayBuffer();
        checkRedirect(res, { ...s, pathAndQuery: q }, `consistency=leader read on follower ${s.follower.id}`);
    });

    test('the dstream client commands follow the redirects: create, two appends and a read through a follower', async () => {
        const s = await placed('cli');
        const run = promisify(execFile);
        const url = s.follower.url + s.path;
        await run(serverBinary(), ['create', url, '--content-type', 'text/plain']);
        const dir = mkdtempSync(path.join(os.tmpdir(), 'dstream-cli-'));
        try {
            for (const body of ['one;', 'two;']) {
                const file = path.join(dir, 'body');
                writeFileSync(file, body);
                await run(serverBinary(), ['append', url, '--file', file]);
            }
        } finally {
            rmSync(dir, { recursive: true, force: true });
        }
        const { stdout } = await run(serverBinary(), ['read', url]);
        assert.equal(stdout, 'one;two;');
        assert.equal((await readAll(s.leader, s.path, { query: 'consistency=leader' })).toString(), 'one;two;');
    });

    test('a sliding TTL kept alive by reads through the leader alone is alive through a follower too; run out, it is gone through any node', async () => {
        const s = await placed('ttl');
        const created = await fetch(s.leader.url + s.path, {
            method: 'PUT', body: 'alive', headers: { 'content-type': 'text/plain', 'stream-ttl': '3' } });
        await created.arrayBuffer();
        assert.equal(created.status, 201);
        // Reads through the leader only, past the 3 s a write alone keeps it.
        for (let i = 0; i < 9; i++) {
            assert.equal((await readAll(s.leader, s.path)).toString(), 'alive');
            await sleep(500);
        }
        // The follower saw none of those reads: the leader, which did, answers.
        const viaFollower = await fetch(`${s.follower.url}${s.path}?offset=-1`);
        assert.equal(viaFollower.status, 200, 'a read through the follower of a stream the leader keeps alive');
        assert.equal(await viaFollower.text(), 'alive');
        await sleep(3500);
        for (const n of c.nodes) {
            const gone = await fetch(`${n.url}${s.path}?offset=-1`);
            await gone.arrayBuffer();
            assert.equal(gone.status, 404, `a read through node ${n.id} once the TTL ran out`);
        }
    });

    test('each node\'s own copy converges to the same bytes (live reads, which a follower serves itself); plain reads through any node return them', async () => {
        const s = await placed('converge');
        assert.equal((await createStream(c, s.follower, s.path)).res.status, 201);
        let expected = '';
        for (let i = 0; i < 30; i++) {
            const body = `c${i};`;
            const r = await append(c, c.nodes[i % 3], s.path, body);
            assert.ok(r.res.status >= 200 && r.res.status < 300, `append ${i}: ${r.res.status} ${r.text}`);
            expected += body;
        }
        for (const n of c.nodes) {
            const deadline = Date.now() + 10_000;
            let got;
            while (true) {
                got = (await readLocal(n, s.path)).toString();
                if (got === expected || Date.now() > deadline) break;
                await sleep(100);
            }
            assert.equal(got, expected, `node ${n.id} (${n.id === s.leader.id ? 'leader' : 'follower'}) own copy`);
            assert.equal((await readAll(n, s.path)).toString(), expected, `plain read through node ${n.id}`);
        }
    });

    test('a follower serves a catch-up read below its tail as it is, and one that reaches its tail once it caught up with the leader', async () => {
        const s = await placed('below');
        assert.equal((await createStream(c, s.leader, s.path)).res.status, 201);
        const expected = 'one;two;three;four;';
        for (const body of expected.split(/(?<=;)/)) {
            const r = await append(c, s.leader, s.path, body);
            assert.ok(r.res.status >= 200 && r.res.status < 300, `append: ${r.res.status} ${r.text}`);
        }
        // The follower has it all (its own copy, by live reads).
        const deadline = Date.now() + 10_000;
        while ((await readLocal(s.follower, s.path)).toString() !== expected) {
            assert.ok(Date.now() < deadline, `follower ${s.follower.id} never held the stream`);
            await sleep(50);
        }
        const below = await fetch(`${s.follower.url}${s.path}?offset=-1&max_bytes=4`, { redirect: 'manual' });
        const text = await below.text();
        assert.equal(below.status, 200, `a read of 4 of ${expected.length} bytes on follower ${s.follower.id}: ` +
                     `${below.status} location=${below.headers.get('location')}`);
        assert.equal(text, expected.slice(0, 4));
        // Read-your-writes through a follower: an append the leader just
        // acknowledged is in the follower's very next read to its tail,
        // served by the follower itself (its read index), not redirected.
        for (let i = 0; i < 20; i++) {
            const body = `more${i};`;
            const r = await append(c, s.leader, s.path, body);
            assert.ok(r.res.status >= 200 && r.res.status < 300, `append: ${r.res.status} ${r.text}`);
            const atTail = await fetch(`${s.follower.url}${s.path}?offset=-1`, { redirect: 'manual' });
            const got = await atTail.text();
            assert.equal(atTail.status, 200, `a read to the tail on follower ${s.follower.id}: ` +
                         `${atTail.status} location=${atTail.headers.get('location')}`);
            assert.ok(got.endsWith(body), `follower ${s.follower.id} read after append ${i}: ...${got.slice(-30)}`);
            assert.equal(atTail.headers.get('stream-up-to-date'), 'true');
        }
    });

    test('answers carry Ursula-Cluster-Id: 404 on the leader and on a follower, a redirected HEAD, /__ursula/cluster', async () => {
        const s = await placed('ids');
        const answers = [
            ['404 on the leader', await fetch(s.leader.url + s.path + '?offset=-1')],
            ['404 on a follower', await fetch(s.follower.url + s.path + '?offset=-1', { redirect: 'manual' })],
            ['HEAD on a follower', await fetch(s.follower.url + s.path, { method: 'HEAD', redirect: 'manual' })],
            ['/__ursula/cluster', await fetch(s.follower.url + '/__ursula/cluster')],
        ];
        assert.equal(answers[0][1].status, 404);
        for (const [what, res] of answers) {
            await res.arrayBuffer();
            assert.equal(res.headers.get('ursula-cluster-id'), CLUSTER_ID, `${what} (${res.status})`);
        }
        // A follower says 404 only once it caught up with the leader (a
        // read index), so its 404 is as current as the leader's.
        assert.equal(answers[1][1].status, 404, 'a follower\'s 404, after it caught up');
        assert.equal(answers[2][1].status, 307, 'HEAD on a follower is redirected');
    });

    test('SIGTERM of a leader hands its groups to another voter before it exits (a new leader sooner than an election timeout)', async () => {
        // The node leading the most groups.
        const leaders = [];
        for (let g = 0; g < GROUPS; g++) leaders.push((await c.leaderOf(g)).id);
        const count = (id) => leaders.filter((x) => x === id).length;
        const victim = c.nodes.reduce((a, b) => (count(b.id) > count(a.id) ? b : a));
        const led = leaders.flatMap((id, g) => (id === victim.id ? [g] : []));
        const others = c.nodes.filter((n) => n !== victim);
        const sent = Date.now();
        const stopping = victim.stop('SIGTERM');
        const handed = await Promise.all(led.map(async (g) => {
            const l = await c.leaderOf(g, { among: others, differentFrom: victim.id, timeoutMs: 10_000 });
            return { group: g, ms: Date.now() - sent, leader: l.id };
        }));
        const how = await stopping;
        assert.deepEqual(how, { code: 0, signal: null }, 'exit after SIGTERM');
        const slowest = Math.max(...handed.map((h) => h.ms));
        console.log(`handoff: ${JSON.stringify({ node: victim.id, groups: handed })}`);
        // Without a hand-off a follower waits at least --raft-election-ms
        // (400) after the last heartbeat.
        assert.ok(slowest < 350, `groups ${led.join(',')} of node ${victim.id} got a new leader only after ${slowest} ms: ${JSON.stringify(handed)}`);
        await victim.restart();
        await c.waitReady(30_000);
    });
});

describe('5 nodes, 3 replicas', () => {
    let c;
    before(async () => {
        c = await startCluster({ nodes: 5, replicas: 3, groups: GROUPS, clusterId: CLUSTER_ID });
        await c.waitReady(30_000);
    });
    after(async () => { await c?.stop(); });

    test('each group is hosted by exactly its 3 voters, which agree on its leader', async () => {
        const statuses = await Promise.all(c.nodes.map((n) => n.status()));
        for (let g = 0; g < GROUPS; g++) {
            const hosts = statuses.filter((st) => st.groups.some((x) => x.group === g));
            assert.equal(hosts.length, 3, `group ${g} listed by nodes ${hosts.map((st) => st.node)}`);
            const voters = hosts[0].groups.find((x) => x.group === g).voters;
            assert.deepEqual(hosts.map((st) => st.node).sort(), [...voters].sort(),
                             `group ${g}: listed by its voters ${voters}`);
            const l = await c.leaderOf(g);
            assert.ok(voters.includes(l.id), `group ${g} leader ${l.id} among its voters ${voters}`);
        }
    });

    test('a node hosting no replica of a stream\'s group redirects naming only x-ursula-raft-group; followed, writes and reads work', async () => {
        const path = bucketPath(uniq('nohost'));
        const group = await c.groupOf(path);
        const statuses = await Promise.all(c.nodes.map((n) => n.status()));
        const voters = statuses.flatMap((st) => st.groups).find((x) => x.group === group).voters;
        const outsider = c.nodes.find((n) => !voters.includes(n.id));
        assert.ok(outsider, `a node outside group ${group}'s voters ${voters}`);
        await c.leaderOf(group);
        for (const [method, body] of [['PUT', undefined], ['POST', 'x;']]) {
            const res = await fetch(outsider.url + path, { method, body, redirect: 'manual',
                                                           headers: { 'content-type': 'application/octet-stream' } });
            await res.arrayBuffer();
            const h = (n) => res.headers.get(n);
            const what = `${method} to node ${outsider.id} (not a voter of group ${group}: ${voters})`;
            assert.equal(res.status, 307, what);
            assert.equal(h('x-ursula-raft-group'), String(group), `${what}: x-ursula-raft-group`);
            assert.equal(h('x-ursula-raft-leader-id'), null, `${what}: no x-ursula-raft-leader-id`);
            assert.equal(h('x-ursula-raft-term'), null, `${what}: no x-ursula-raft-term`);
            assert.equal(h('ursula-cluster-id'), CLUSTER_ID, `${what}: Ursula-Cluster-Id`);
            const loc = new URL(h('location'));
            assert.equal(loc.pathname, path, `${what}: Location path`);
            const target = c.nodeByHttp(loc.host);
            assert.ok(target && voters.includes(target.id), `${what}: Location ${loc} on a voter of the group`);
        }
        const created = await fetch(outsider.url + path, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' } });
        await created.arrayBuffer();
        assert.equal(created.status, 201, 'PUT through the outsider, redirects followed');
        const r = await fetch(outsider.url + path, { method: 'POST', body: 'hello;', headers: { 'content-type': 'application/octet-stream' } });
        await r.arrayBuffer();
        assert.ok(r.status >= 200 && r.status < 300, `POST through the outsider: ${r.status}`);
        for (const n of c.nodes) {
            assert.equal((await readAll(n, path, { query: 'consistency=leader' })).toString(), 'hello;', `read through node ${n.id}`);
        }
    });
});
