// Power-loss test of the durable server: the crash rounds of the kill -9 test
// (tests/crash/lib/crash_rounds.mjs), where each crash is a SIGKILL followed
// by a power cut: the data dir goes back to what the shim (shim.c) recorded as
// synced, file bytes and directory entries alike. Every acknowledged write
// must still be there, once, in order.
//
//   DSTREAM_BIN=build/dstream DSTREAM_POWERLOSS_SHIM=build/tests/powerloss/libpowerloss_shim.so \
//     node --test tests/powerloss/powerloss.test.mjs
//
// Environment: POWERLOSS_ROUNDS (default 10), POWERLOSS_TIME_BUDGET_MS
// (default 150000; every round must start within it), POWERLOSS_SEED and the
// other settings of crash_rounds.mjs under the prefix POWERLOSS_.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';

import { runCrashRounds } from '../crash/lib/crash_rounds.mjs';
import { cutPower } from './lib/power_cut.mjs';

const shim = process.env.DSTREAM_POWERLOSS_SHIM;
// The test's own bound follows a longer time budget: every round must run.
const budgetMs = Number(process.env.POWERLOSS_TIME_BUDGET_MS || 150_000);

test('power cuts under concurrent idempotent producers lose and duplicate nothing acknowledged',
     { timeout: Math.max(280_000, budgetMs + 130_000) }, async () => {
    assert.ok(shim && existsSync(shim), `DSTREAM_POWERLOSS_SHIM=${shim} must name the built shim`);
    let state;
    let data;
    const cuts = { unsyncedBytes: 0, filesDropped: 0, filesRestored: 0 };
    await runCrashRounds({
        name: 'powerloss',
        prefix: 'POWERLOSS',
        defaults: { ROUNDS: 10, TIME_BUDGET_MS: 150_000 },
        setup: (dir, dataDir) => {
            data = dataDir;
            state = path.join(dir, 'state');  // beside the data dir: the same filesystem
            mkdirSync(state);
            return {
                LD_PRELOAD: shim,
                DSTREAM_POWERLOSS_DIR: data,
                DSTREAM_POWERLOSS_STATE: state,
                // An ASan build wants its runtime first; the shim does not mind.
                ASAN_OPTIONS: [process.env.ASAN_OPTIONS, 'verify_asan_link_order=0'].filter(Boolean).join(':'),
            };
        },
        crash: async (server, round, extra) => {
            await server.kill9();
            const undone = cutPower(data, state);
            for (const key of Object.keys(cuts)) cuts[key] += undone[key];
            extra.cut_unsynced_bytes = cuts.unsyncedBytes;
            extra.cut_files_dropped = cuts.filesDropped;
            extra.cut_files_restored = cuts.filesRestored;
        },
    });
});
