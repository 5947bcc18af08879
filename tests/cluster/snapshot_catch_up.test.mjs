// A replica too far behind for the leader's log catches up from the leader's
// snapshot, which travels by way of the shared bucket (snapshot_courier.h):
// 3 nodes, one group, checkpoints every 64 KiB of log. A follower is killed,
// 1500 appends of 1 KiB go in (the leader checkpoints and lets its log go,
// bar 1024 entries), the follower starts again: it fetches the leader's image
// from the bucket, installs it, and serves every byte, while the leader
// counts an image put and the follower one fetched.
//
//   tests/s3/with_s3rver.sh node --test tests/cluster/snapshot_catch_up.test.mjs   (DSTREAM_BIN set)
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { uniq } from '../http/lib/http.mjs';
import { append, createStream, metricTotal, readAll, readLocal, sleep, startCluster } from './lib/cluster.mjs';

describe('a lagging replica catches up from a snapshot in the bucket', () => {
    let c;
    before(async () => {
        c = await startCluster({ nodes: 3, replicas: 3, groups: 1,
                                 extraArgs: ['--checkpoint-bytes', '65536'] });
        await c.waitReady(30_000);
    });
    after(async () => { await c?.stop(); });

    test('a follower killed before 1500 appends installs the leader\'s image and serves every byte', async () => {
        const path = `/cluster/${uniq('snap')}`;
        const created = await createStream(c, null, path);
        assert.equal(created.res.status, 201, `PUT ${path}: ${created.res.status} ${created.text}`);
        const leader = await c.leaderOf(0);
        const lagging = c.nodes.find((n) => n !== leader.node);
        await lagging.kill9();

        const chunk = (i) => `${String(i).padStart(6, '0')}:${'x'.repeat(1017)}\n`;
        let expected = '';
        for (let i = 0; i < 1500; i++) {
            const r = await append(c, leader.node, path, chunk(i));
            assert.ok(r.res.status === 204 || r.res.status === 200, `append ${i}: ${r.res.status} ${r.text}`);
            expected += chunk(i);
        }
        const sentBefore = await metricTotal(leader.node, 'dstream_raft_snapshots_sent_total');
        const leaderCommit = (await leader.node.status()).groups.find((g) => g.group === 0).commit;

        await lagging.restart();
        const deadline = Date.now() + 60_000;
        let row;
        while (true) {
            row = (await lagging.status()).groups.find((g) => g.group === 0);
            if (row && row.applied >= leaderCommit) break;
            if (Date.now() > deadline) {
                assert.fail(`node ${lagging.id} did not catch up to ${leaderCommit} within 60 s: ` +
                            `${JSON.stringify(row)}\n${await c.describe()}`);
            }
            await sleep(100);
        }
        assert.ok(await metricTotal(lagging, 'dstream_raft_snapshots_fetched_total') >= 1,
                  `node ${lagging.id} caught up without fetching a snapshot image\n${lagging.log()}`);
        assert.ok(await metricTotal(leader.node, 'dstream_raft_snapshots_sent_total') >= Math.max(1, sentBefore),
                  `the leader put no snapshot image in the bucket\n${leader.node.log()}`);

        const local = (await readLocal(lagging, path)).toString();
        assert.equal(local.length, expected.length, 'the caught-up replica holds every byte');
        assert.ok(local === expected, 'the caught-up replica holds the bytes in order');
        const served = (await readAll(lagging, path)).toString();
        assert.ok(served === expected, 'a read through the caught-up replica answers every byte');
    });
});
