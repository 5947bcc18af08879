// Soak of the durable server (`make soak`; not part of `make test`): for
// SOAK_MINUTES (default 30), the crash rounds' idempotent producers (paced),
// plus appends without producers, live readers (SSE and long-poll), snapshots
// (some large enough to be object files) and forks (side_load.mjs). Every
// round ends in a restart, alternately kill -9 and a clean stop (SIGTERM),
// and every acknowledged write is checked after each restart and at the end.
// The server's RSS is printed every 30 s, so that growth over time shows.
//
//   DSTREAM_BIN=build/dstream SOAK_MINUTES=5 node tests/soak/soak.mjs
//
// Environment: SOAK_MINUTES, SOAK_SEED, SOAK_ROUND_SECONDS ("MIN,MAX": how
// long each server process lives, default 20,60; a long life shows RSS over
// time within one process), SOAK_PACE_MS (a producer's mean pause
// between writes, default 100), SOAK_PLAIN_STREAMS (default 4) and the other
// settings of tests/crash/lib/crash_rounds.mjs under the prefix SOAK_
// (SOAK_SERVER_ARGS, SOAK_PRODUCERS, ...). Exits 1 on any problem.
import { rng, runCrashRounds } from '../crash/lib/crash_rounds.mjs';
import { SideLoad } from './side_load.mjs';

const minutes = Number(process.env.SOAK_MINUTES ?? 30);
const seed = Number(process.env.SOAK_SEED ?? Math.floor(Math.random() * 2 ** 31));
const roundSeconds = (process.env.SOAK_ROUND_SECONDS ?? '20,60').split(',').map(Number);
if (roundSeconds.length !== 2 || !roundSeconds.every((s) => s > 0) || roundSeconds[0] > roundSeconds[1]) {
    throw new Error(`SOAK_ROUND_SECONDS must be "MIN,MAX" seconds, got ${process.env.SOAK_ROUND_SECONDS}`);
}
const RSS_EVERY_MS = 30_000;
const MiB = 1024 * 1024;

const load = new SideLoad({ plainStreams: Number(process.env.SOAK_PLAIN_STREAMS ?? 4), rand: rng(seed ^ 0x50a4) });
const started = Date.now();
let server = null;
const restarts = { kill9: 0, clean: 0 };
let peak = 0;
const printer = setInterval(() => {
    const rss = server?.rss();
    if (rss === null || rss === undefined) return;
    peak = Math.max(peak, rss);
    const t = Math.round((Date.now() - started) / 1000);
    console.log(`soak: t=${t}s rss_mib=${(rss / MiB).toFixed(1)} peak_mib=${(peak / MiB).toFixed(1)} ` +
                `plain_acked=${load.figures.plain_acked} snapshots=${load.figures.snapshots} forks=${load.figures.forks} ` +
                `kill9=${restarts.kill9} clean=${restarts.clean}`);
}, RSS_EVERY_MS);

console.log(`soak: ${minutes} minutes, seed ${seed}`);
try {
    await runCrashRounds({
        name: 'soak',
        prefix: 'SOAK',
        defaults: {
            ROUNDS: 100_000,
            TIME_BUDGET_MS: Math.round(minutes * 60_000),
            SEED: seed,
            QUIET_EVERY: 0,  // every round outlasts the 5 s idle sweep anyway
            PACE_MS: 100,
        },
        roundMs: (master) => master.int(roundSeconds[0] * 1000, roundSeconds[1] * 1000),
        crash: async (srv, round, extra) => {
            if (round % 2 === 1) {
                await srv.kill9();
                restarts.kill9++;
            } else {
                await srv.stopCleanly();
                restarts.clean++;
            }
            extra.kill9 = restarts.kill9;
            extra.clean_stops = restarts.clean;
            extra.rss_peak_mib = (peak / MiB).toFixed(1);
        },
        load: {
            start: (ctx) => {
                server = ctx.server;
                return load.start(ctx);
            },
            verify: (ctx) => load.verify(ctx),
            finish: (ctx) => load.finish(ctx),
        },
    });
    console.log(`soak: passed after ${Math.round((Date.now() - started) / 60_000)} minutes`);
} catch (err) {
    console.log(`soak: FAILED: ${err.message}`);
    process.exitCode = 1;
} finally {
    clearInterval(printer);
}
