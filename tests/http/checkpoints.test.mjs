// When a durable node's groups write checkpoints (docs/operations.md): a
// group that keeps applying writes one only after --checkpoint-bytes of its
// log, as a checkpoint rewrites the group's hot tails; one that goes quiet
// writes one at the second sweep (every 5 s) after its last write.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { notOnCluster, notOverTls, startServer } from './lib/server.mjs';
import { uniq, sleep } from './lib/http.mjs';
import { filesUnder } from './lib/files.mjs';

// The highest log index a finished checkpoint covers (g<group>-<index>.ckpt).
function highestCheckpointIndex(dir) {
    const indexes = filesUnder(dir)
        .map((f) => /-(\d+)\.ckpt$/.exec(path.basename(f.path)))
        .filter(Boolean)
        .map((m) => Number(m[1]));
    return Math.max(0, ...indexes);
}

test('a group that keeps writing is not checkpointed at every sweep; once quiet, it is',
     { skip: notOnCluster('reads the checkpoints of a data dir') ||
             notOverTls('the checkpoint schedule does not depend on the transport') },
     async () => {
    const dur = await startServer({ memory: false });
    try {
        const url = `${dur.url}/v1/stream/${uniq('ckpt')}`;
        const text = { 'content-type': 'text/plain' };
        assert.equal((await fetch(url, { method: 'PUT', headers: text })).status, 201);
        const ckptDir = path.join(dur.dataDir, 'checkpoints');
        // 11.5 s of appends, ten a second: past two sweeps, each of which
        // finds the group busy. A fresh node's groups start with two
        // entries of their own; the stream's group passes 100 in 10 s.
        const started = Date.now();
        let appended = 0;
        while (Date.now() - started < 11_500) {
            const r = await fetch(url, { method: 'POST', headers: text, body: `line ${appended}\n` });
            assert.equal(r.status, 204);
            appended++;
            await sleep(100);
        }
        assert.ok(appended > 50, `only ${appended} appends in 11.5 s`);
        assert.ok(highestCheckpointIndex(ckptDir) < 10,
                  `a checkpoint covering index ${highestCheckpointIndex(ckptDir)} was written while its group kept writing`);

        const quiet = Date.now();
        while (highestCheckpointIndex(ckptDir) < appended) {
            assert.ok(Date.now() - quiet < 15_000, 'no checkpoint of the quiet group within 15 s');
            await sleep(200);
        }
    } finally {
        await dur.stop();
    }
});
