// Runs a whole suite against a 3-node cluster through a node that follows:
//
//   node through_follower.mjs conformance    the upstream suite (tests/conformance/run.sh)
//
// The cluster has one group, so every stream's writes go through the same
// follower, which redirects them (307) to the leader; the suite's fetch
// follows redirects with any body (tests/conformance/follow_redirects.mjs).
// Reads at the follower's tail are the follower's own, after a read index.
// Exits with the suite's status. Run under tests/s3/with_s3rver.sh.
import { spawn } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

import { startCluster } from './lib/cluster.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const suite = process.argv[2];
if (suite !== 'conformance') {
    console.error('usage: node through_follower.mjs conformance');
    process.exit(2);
}

const cluster = await startCluster({ nodes: 3, groups: 1 });
let status = 1;
try {
    await cluster.waitReady();
    const leader = await cluster.leaderOf(0);
    const follower = cluster.nodes.find((n) => n.id !== leader.id);
    console.log(`through_follower: group 0 led by node ${leader.id}; the suite talks to node ${follower.id} at ${follower.url}`);
    const child = spawn('bash', [path.join(here, '../conformance/run.sh'), '-', 'external'], {
        stdio: 'inherit',
        env: { ...process.env, DSTREAM_URL: follower.url, DSTREAM_FOLLOW_REDIRECTS: '1' },
    });
    status = await new Promise((resolve) => child.on('exit', (code, signal) => resolve(signal ? 1 : code)));
    // The suite must have gone through a follower: the leader did not move.
    const after = await cluster.leaderOf(0);
    if (after.id === follower.id) {
        console.error(`through_follower: node ${follower.id} became the leader during the run`);
        status = status || 1;
    }
} finally {
    await cluster.stop();
}
process.exit(status);
