// The crash test of a node whose cold tier is S3 (run under with_s3rver.sh),
// with two S3 outages of several seconds: SIGKILLs under concurrent
// idempotent producers lose and double nothing (tests/crash/lib/crash_rounds.mjs
// checks every acknowledged write), and the outages change only when bytes
// move to the bucket, never what a stream holds.
//
//   round OUTAGE_RESUMED: s3rver stops as the round starts and comes back
//     after OUTAGE_MS; the node must resume flushing by itself before the kill
//     (dstream_groups_cold_failing back to 0), having failed flushes meanwhile;
//   round OUTAGE_ACROSS_KILL: s3rver stops as the round starts, the node is
//     killed while it is down, and s3rver comes back only after the kill.
//
// While S3 is down, writes go on into the hot tier until --hot-bytes, then are
// refused with 503 COLD_BACKPRESSURE and Retry-After; producers repeat them
// (the `backpressure` mode of the rounds), and the repeat must be answered
// 200: a refusal applied nothing.
//
// Environment: S3_CRASH_ROUNDS, S3_CRASH_SEED, ... (crash_rounds.mjs, prefix
// S3_CRASH); S3_CRASH_OUTAGE_MS (default 4000).
import assert from 'node:assert/strict';
import { test } from 'node:test';

import { runCrashRounds } from '../crash/lib/crash_rounds.mjs';
import { parsePrometheus, total } from '../http/lib/prometheus.mjs';

const env = (name) => {
    const v = process.env[name];
    assert.ok(v, `${name} is not set: run under tests/s3/with_s3rver.sh`);
    return v;
};
const endpoint = env('DSTREAM_TEST_S3_ENDPOINT');
const bucket = env('DSTREAM_TEST_S3_BUCKET');
const control = Number(env('DSTREAM_TEST_S3_CONTROL_PID'));

// The crash test's small thresholds (WAL segments roll, groups checkpoint,
// hot tails flush all through it), with the bucket as the cold tier. One
// group: a group holds at least 1 MiB hot, and the outages must fill it.
process.env.S3_CRASH_SERVER_ARGS ??= '--wal-segment-bytes 262144 --checkpoint-bytes 262144 ' +
    `--hot-bytes 1048576 --groups 1 --cold-store s3://${bucket}/crash --s3-endpoint ${endpoint}`;

const OUTAGE_MS = Number(process.env.S3_CRASH_OUTAGE_MS || 4000);
const OUTAGE_RESUMED = 2;
const OUTAGE_ACROSS_KILL = 5;
// After s3rver is back, the node's flush backoff (500 ms doubling, jittered)
// has up to this long to retry before the kill.
const RESUME_MS = 6000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function s3Answers() {
    try {
        await (await fetch(`${endpoint}/`, { signal: AbortSignal.timeout(1000) })).arrayBuffer();
        return true;
    } catch {
        return false;
    }
}

// SIGUSR1 stops s3rver, SIGUSR2 starts it again (with_s3rver.mjs); both are
// awaited until the port says so.
async function setS3(up) {
    process.kill(control, up ? 'SIGUSR2' : 'SIGUSR1');
    const deadline = Date.now() + 10_000;
    while (await s3Answers() !== up) {
        assert.ok(Date.now() < deadline, `s3rver did not ${up ? 'come back' : 'stop'} within 10 s`);
        await sleep(25);
    }
}

async function coldFigures(server) {
    const m = parsePrometheus(await (await fetch(`${server.url}/__ursula/metrics`,
                                                  { signal: AbortSignal.timeout(5000) })).text());
    return {
        failing: total(m, 'dstream_groups_cold_failing'),
        flushFailures: total(m, 'dstream_cold_flush_failures_total'),
        puts: total(m, 'dstream_object_store_operations_total', { op: 'put', result: 'ok' }),
    };
}

test('kill -9 with two S3 outages under concurrent idempotent producers loses and duplicates nothing',
     { timeout: 560_000 }, async () => {
    const outages = { resumed: null, acrossKill: null };
    let round = 0;
    await runCrashRounds({
        name: 's3_crash_kill9_outages',
        prefix: 'S3_CRASH',
        backpressure: true,
        defaults: { ROUNDS: 8, TIME_BUDGET_MS: 200_000 },
        roundMs: (master, quiet) => {
            round += 1;
            if (round === OUTAGE_RESUMED) return OUTAGE_MS + RESUME_MS;
            if (round === OUTAGE_ACROSS_KILL) return OUTAGE_MS;
            return quiet ? master.int(5600, 6500) : master.int(100, 1500);
        },
        load: {
            async start(ctx) {
                const r = ctx.stats.kills + 1;
                if (r !== OUTAGE_RESUMED && r !== OUTAGE_ACROSS_KILL) return;
                const acked = ctx.stats.acknowledged;
                const refusals = ctx.stats.backpressureRefusals;
                const before = await coldFigures(ctx.server);
                await setS3(false);
                if (r === OUTAGE_ACROSS_KILL) {
                    outages.acrossKill = { acked, refusals };
                    while (!ctx.killed) await sleep(50);
                    outages.acrossKill.ackedDown = ctx.stats.acknowledged - acked;
                    outages.acrossKill.refused = ctx.stats.backpressureRefusals - refusals;
                    return;
                }
                await sleep(OUTAGE_MS);
                const down = await coldFigures(ctx.server);
                const ackedDown = ctx.stats.acknowledged - acked;
                await setS3(true);
                // The node retries by itself: every group's flushes succeed again.
                let resumedAfterMs = null;
                const back = Date.now();
                while (!ctx.killed) {
                    const now = await coldFigures(ctx.server).catch(() => null);
                    if (now && now.failing === 0 && now.puts > down.puts) {
                        resumedAfterMs = Date.now() - back;
                        break;
                    }
                    await sleep(100);
                }
                outages.resumed = {
                    ackedDown,
                    refused: ctx.stats.backpressureRefusals - refusals,
                    flushFailures: down.flushFailures - before.flushFailures,
                    failingWhileDown: down.failing,
                    resumedAfterMs,
                };
                while (!ctx.killed) await sleep(50);
            },
            async verify() {},
            async finish() {},
        },
        crash: async (server, r, extra) => {
            await server.kill9();
            if (r === OUTAGE_ACROSS_KILL) {
                // Down across the kill: the bytes not yet in the bucket are in the
                // WAL alone until the restarted node flushes them.
                await sleep(500);
                await setS3(true);
                extra.outage_across_kill = JSON.stringify(outages.acrossKill);
            }
            if (r === OUTAGE_RESUMED) extra.outage_resumed = JSON.stringify(outages.resumed);
        },
    });
    // Both outages happened, writes went on into the hot tier while S3 was
    // down, chunk flushes failed then, and the node resumed flushing by itself.
    assert.ok(outages.resumed && outages.acrossKill, 'both outage rounds ran');
    assert.ok(outages.resumed.ackedDown > 0, 'writes were acknowledged during the first outage');
    assert.ok(outages.acrossKill.ackedDown > 0, 'writes were acknowledged during the second outage');
    assert.ok(outages.resumed.flushFailures > 0 && outages.resumed.failingWhileDown > 0,
              `chunk flushes failed while S3 was down: ${JSON.stringify(outages.resumed)}`);
    assert.notEqual(outages.resumed.resumedAfterMs, null,
                    `the node resumed flushing within ${RESUME_MS} ms of S3's return: ${JSON.stringify(outages.resumed)}`);
});
