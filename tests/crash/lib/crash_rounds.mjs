// Crash rounds against the durable server: concurrent idempotent producers,
// a crash at a random moment, a restart on the same data dir, and a check of
// every acknowledged write. The crash is the caller's: a SIGKILL
// (tests/crash/kill9.test.mjs), or a SIGKILL followed by a simulated power
// cut (tests/powerloss/powerloss.test.mjs).
//
// Each round: producers append until the crash; the server restarts on the
// same --data-dir and port; every stream is read back whole and checked: each
// acknowledged write (answer 200, or 204 for a repeat) is present exactly
// once, at the offsets it was acknowledged with, with identical bytes, in
// acknowledgement order per producer; the stream parses as whole messages
// only; a write whose answer was lost may be there or not, but whole.
// Producers that lost an answer then repeat that write with the same (epoch,
// seq): the server must answer 200 if it is absent and 204 (same offsets) if
// present.
//
// One round in QUIET_EVERY (rounds 3, 8, 13, 18 by default) is quiet: it lasts
// past the server's first 5 s sweep (which checkpoints every group that
// applied nothing since the start) and writes to a quarter of the streams
// only, so that some groups go idle, get checkpointed and lose their WAL
// segments before the crash; the next rounds
// write to them again. With the small thresholds of SERVER_ARGS, WAL segments
// roll and are deleted, groups checkpoint and hot tails flush to chunk files
// all through the test.
//
// The test fails unless every planned round ran (a round not started within
// the time budget fails it, so that a slow machine is seen, not hidden) and
// unless at least one write whose answer the crash lost was repeated and
// answered (lost_answer_retries): the repeat with the same producer key is
// what the idempotent producers are for. A kill at a timer often finds every
// write sent already answered (this process is slower than the server), so
// half the kills land as a write leaves; while none was lost up to ROUNDS,
// more rounds run (extra_rounds=).
//
// Environment, each name after the caller's prefix (CRASH_ROUNDS, ...):
// ROUNDS (crashes), TIME_BUDGET_MS (no round starts after it: the test then
// fails, naming the rounds that ran), SEED
// (default random; printed), STREAMS, JSON_STREAMS, PRODUCERS, SERVER_ARGS
// (extra `dstream serve` flags; empty for the server's defaults), QUIET_EVERY
// (0: no long rounds), PACE_MS (each producer's mean pause between writes;
// 0: none), KEEP_DIR=1 (keep the data dir on failure), VERBOSE=1.
// DSTREAM_BIN names the server.
import assert from 'node:assert/strict';
import { createHash, randomInt } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { freePort } from '../../http/lib/server.mjs';
import { ServerProcess } from './server_process.mjs';

const envInt = (name, dflt) => {
    const v = process.env[name];
    if (v === undefined || v === '') return dflt;
    const n = Number.parseInt(v, 10);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${v} is not a non-negative integer`);
    return n;
};

// The settings of one test, from the environment under `prefix`.
function settings(prefix, defaults) {
    const int = (name, dflt) => envInt(`${prefix}_${name}`, defaults[name] ?? dflt);
    const flag = (name) => process.env[`${prefix}_${name}`];
    return {
        PREFIX: prefix,
        ROUNDS: int('ROUNDS', 20),
        TIME_BUDGET_MS: int('TIME_BUDGET_MS', 300_000),
        OCTET_STREAMS: int('STREAMS', 40),
        JSON_STREAMS: int('JSON_STREAMS', 4),
        PRODUCERS: int('PRODUCERS', 32),
        SEED: int('SEED', randomInt(1, 2 ** 31)),
        QUIET_EVERY: int('QUIET_EVERY', 5),
        SERVER_ARGS: (flag('SERVER_ARGS') ??
            '--wal-segment-bytes 262144 --checkpoint-bytes 262144 --hot-bytes 1048576')
            .split(/\s+/).filter(Boolean),
        KEEP_DIR: flag('KEEP_DIR') === '1',
        VERBOSE: Boolean(flag('VERBOSE')),
        PACE_MS: int('PACE_MS', 0),
    };
}

// What each kind of problem means, for the failure message.
const PROBLEM_KINDS = {
    losses: 'acknowledged writes lost',
    duplicates: 'writes present more than once',
    misplaced: 'writes not at their acknowledged offsets',
    corrupt: 'streams that do not parse as whole messages',
    phantoms: 'messages nobody wrote or nobody is in doubt about',
    orderViolations: 'per-producer order broken',
    retryMismatches: 'repeats of writes in doubt answered wrongly',
    unexpectedAnswers: 'unexpected answers',
    headerMismatches: 'write answers with wrong offsets',
    roundsWithoutAcks: 'rounds in which no write was acknowledged',
};

const STREAMS_PER_PRODUCER = 3;
const KILL_MIN_MS = 100;
const KILL_MAX_MS = 1500;
const QUIET_KILL_MIN_MS = 5600;  // the server's idle sweep runs every 5 s
const QUIET_KILL_MAX_MS = 6500;
const QUIET_STREAM_SHARE = 0.25;
const MAX_LEN = 4096;
const EPOCH_BUMP_PROBABILITY = 0.15;
const READ_CONCURRENCY = 8;
// A kill often lands when every write sent has been answered (the answers of
// a flushed batch are on their way): rounds past the plan, at most this many,
// run until one kill has left a write without its answer. With one WAL
// flush thread 16 kills in a row have left none (seed 1344058495, a loaded
// machine), so the margin is wide.
const MAX_EXTRA_ROUNDS = 30;
const REQUEST_TIMEOUT_MS = 30_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- randomness

// mulberry32: small, seedable, good enough for schedules and lengths.
export function rng(seed) {
    let a = seed >>> 0;
    const next = () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
    return { next, int: (lo, hi) => lo + Math.floor(next() * (hi - lo + 1)) };
}

// FNV-1a over (stream, producer, epoch, seq): the seed of a message's filler.
function messageSeed(si, k, e, s) {
    let h = 0x811c9dc5;
    for (const v of [si, k, e, s, 0x5eed]) {
        for (let b = 0; b < 4; b++) {
            h ^= (v >>> (8 * b)) & 0xff;
            h = Math.imul(h, 0x01000193) >>> 0;
        }
    }
    return h || 1;
}

// xorshift32 filler: every byte of every message is a function of its identity.
function fill(buf, at, len, seed, alphabet) {
    let x = seed | 0;
    for (let i = 0; i < len; i++) {
        x ^= x << 13;
        x ^= x >>> 17;
        x ^= x << 5;
        buf[at + i] = alphabet ? alphabet[(x >>> 0) % alphabet.length] : x & 0xff;
    }
}

// ---------------------------------------------------------------- messages
//
// Octet message: "MSG|kkk|eeeee|ssssssss|llll|" + l filler bytes (binary) + "|END\n".
// JSON message:  {"p":k,"e":e,"s":s,"n":l,"f":"<l alphanumerics>"}, stored with a LF.

const HDR = 28;
const TRAILER = Buffer.from('|END\n', 'latin1');
const HDR_RE = /^MSG\|(\d{3})\|(\d{5})\|(\d{8})\|(\d{4})\|$/;
const JSON_RE = /^\{"p":(\d+),"e":(\d+),"s":(\d+),"n":(\d+),"f":"/;
const ALNUM = Buffer.from('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789', 'latin1');
const pad = (n, w) => String(n).padStart(w, '0');

function octetBody(si, k, e, s, len) {
    const b = Buffer.allocUnsafe(HDR + len + TRAILER.length);
    b.write(`MSG|${pad(k, 3)}|${pad(e, 5)}|${pad(s, 8)}|${pad(len, 4)}|`, 0, 'latin1');
    fill(b, HDR, len, messageSeed(si, k, e, s), null);
    TRAILER.copy(b, HDR + len);
    return b;
}

function jsonText(si, k, e, s, len) {
    const f = Buffer.allocUnsafe(len);
    fill(f, 0, len, messageSeed(si, k, e, s), ALNUM);
    return `{"p":${k},"e":${e},"s":${s},"n":${len},"f":"${f.toString('latin1')}"}`;
}

// The write body and the bytes the server stores for it.
export function makeMessage(stream, k, e, s, len) {
    if (stream.json) {
        const text = jsonText(stream.si, k, e, s, len);
        return { body: text, stored: Buffer.from(text + '\n', 'latin1') };
    }
    const body = octetBody(stream.si, k, e, s, len);
    return { body, stored: body };
}

// Parses the whole message at `at` of the stored bytes `buf`:
// {k, e, s, len, size} or {error}.
export function parseMessage(stream, buf, at) {
    if (stream.json) {
        const lf = buf.indexOf(0x0a, at);
        if (lf < 0) return { error: `partial JSON message (${buf.length - at} bytes without LF)` };
        const line = buf.toString('latin1', at, lf);
        const m = JSON_RE.exec(line);
        if (!m) return { error: `not a message: ${JSON.stringify(line.slice(0, 60))}` };
        const [k, e, s, len] = m.slice(1).map(Number);
        if (len < 1 || len > MAX_LEN) return { error: `bad length ${len}` };
        const want = jsonText(stream.si, k, e, s, len);
        if (line !== want) return { error: `message p${k} e${e} s${s} bytes differ from what was written` };
        return { k, e, s, len, size: lf + 1 - at };
    }
    if (buf.length - at < HDR) return { error: `partial message header (${buf.length - at} bytes)` };
    const m = HDR_RE.exec(buf.toString('latin1', at, at + HDR));
    if (!m) return { error: `not a message header: ${JSON.stringify(buf.toString('latin1', at, at + HDR))}` };
    const [k, e, s, len] = m.slice(1).map(Number);
    if (len < 1 || len > MAX_LEN) return { error: `bad length ${len}` };
    const size = HDR + len + TRAILER.length;
    if (buf.length - at < size) {
        return { error: `partial message p${k} e${e} s${s}: ${buf.length - at} of ${size} bytes` };
    }
    if (!buf.subarray(at, at + size).equals(octetBody(stream.si, k, e, s, len))) {
        return { error: `message p${k} e${e} s${s} bytes differ from what was written` };
    }
    return { k, e, s, len, size };
}

// ---------------------------------------------------------------- the test

// Runs the rounds and asserts that nothing acknowledged was lost, duplicated,
// moved or damaged. `name` prefixes the printed figures, `prefix` the
// environment settings (`defaults` overrides their defaults). Hooks:
//   setup(dir, dataDir): before the first start, with a fresh temporary dir
//             and the data dir in it; returns environment for the server
//             (e.g. an LD_PRELOAD)
//   crash(server, round, extra): ends a round (default: SIGKILL); may count
//             figures of its own in `extra`, printed with the others
//   roundMs(master, quiet): how long a round writes before its crash
//   load:     more traffic beside the producers: {start(ctx) -> promise that
//             settles once ctx.killed, verify(ctx) after each restart,
//             finish(ctx) before the final check}; it reports through
//             ctx.problem(kind, text) and ctx.stats
//   backpressure: a write refused with 503 COLD_BACKPRESSURE (a cold store
//             that fails, past the hot budget) is repeated after its
//             Retry-After, and must then be answered 200: the refusal applied
//             nothing (stats.backpressureRefusals). Without it a 503 is an
//             unexpected answer.
export async function runCrashRounds({ name, prefix, defaults = {}, setup = () => ({}),
                                       crash = (server) => server.kill9(), roundMs = null,
                                       load = null, backpressure = false }) {
    const bin = process.env.DSTREAM_BIN;
    assert.ok(bin, 'DSTREAM_BIN is not set: point it at the dstream binary');
    assert.ok(existsSync(bin), `DSTREAM_BIN=${bin} does not exist`);
    const cfg = settings(prefix, defaults);

    const dir = mkdtempSync(path.join(os.tmpdir(), `${name}-`));
    const data = path.join(dir, 'data');
    mkdirSync(data);
    const env = await setup(dir, data);
    const server = new ServerProcess(bin, data, { args: cfg.SERVER_ARGS, env });
    const killOnExit = () => { try { server.child?.kill('SIGKILL'); } catch { /* gone */ } };
    process.on('exit', killOnExit);
    let passed = false;
    try {
        await run(server, { name, cfg, crash, roundMs, load, backpressure });
        passed = true;
    } finally {
        await server.stop();
        process.off('exit', killOnExit);
        if (passed || !cfg.KEEP_DIR) {
            rmSync(dir, { recursive: true, force: true });
        } else {
            console.log(`${name}: data dir kept at ${dir}`);
        }
    }
}

async function run(server, { name, cfg, crash, roundMs, load, backpressure }) {
    const t0 = Date.now();
    const master = rng(cfg.SEED);
    const stats = {
        kills: 0, acknowledged: 0, verified: 0, losses: 0, duplicates: 0, misplaced: 0, phantoms: 0,
        corrupt: 0, orderViolations: 0, retryMismatches: 0, unexpectedAnswers: 0, headerMismatches: 0,
        unanswered: 0, unansweredPresent: 0, unansweredAbsent: 0, retried200: 0, retried204: 0,
        lostAnswerRetries: 0, backpressureRefusals: 0,
        transientErrors: 0, staleProbes: 0, restartMsMax: 0, downMsMax: 0, verifyMsMax: 0,
        roundsWithoutAcks: 0,
    };
    const extra = {};  // the crash hook's and the load's own figures
    const problems = [];
    const failing = new Set();
    const seen = new Set();
    // `id` names the fault, so that one fault seen by several verifications counts once.
    const problem = (kind, text, id = null) => {
        if (id !== null) {
            if (seen.has(`${kind} ${id}`)) return;
            seen.add(`${kind} ${id}`);
        }
        failing.add(kind);
        stats[kind] = (stats[kind] ?? 0) + 1;
        if (stats[kind] <= 8) problems.push(`${kind}: ${text}`);  // the first few of each kind
    };

    // First start: a fresh port (retry if someone took it between probe and bind).
    let first = null;
    for (let attempt = 0; attempt < 5 && !first?.ms; attempt++) {
        first = await server.start(await freePort());
    }
    if (!first?.ms) throw new Error(`could not start ${server.bin}: ${first?.failed}\n${server.tail()}`);
    assert.match(server.log, /durable/, 'the server must run durable (not --memory)');

    // Streams: octet on the bucketed surface, JSON on /v1/stream.
    const streams = [];
    for (let i = 0; i < cfg.OCTET_STREAMS; i++) {
        streams.push({ si: streams.length, json: false, path: `/crash-test/s${i}`,
                       contentType: 'application/octet-stream' });
    }
    for (let i = 0; i < cfg.JSON_STREAMS; i++) {
        streams.push({ si: streams.length, json: true, path: `/v1/stream/crash-test-j${i}`,
                       contentType: 'application/json' });
    }
    for (const st of streams) {
        st.acked = [];  // in acknowledgement order: {k, e, s, len, start, end}
        st.prefix = { len: 0, digest: sha256(Buffer.alloc(0)), msgs: [] };
        const res = await fetch(server.url + st.path, { method: 'PUT', headers: { 'Content-Type': st.contentType },
                                                        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
        await res.arrayBuffer();
        assert.equal(res.status, 201, `create ${st.path}`);
    }

    // Producers: producer k owns streams (k + j*PRODUCERS) mod S, j < STREAMS_PER_PRODUCER,
    // with its own (epoch, seq) per stream. Streams are shared by 2-3 producers.
    const producers = [];
    for (let k = 0; k < cfg.PRODUCERS; k++) {
        const pairs = [];
        for (let j = 0; j < STREAMS_PER_PRODUCER; j++) {
            const stream = streams[(k + j * cfg.PRODUCERS) % streams.length];
            if (!pairs.some((p) => p.stream === stream)) pairs.push({ stream, epoch: 0, seq: 0 });
        }
        producers.push({ k, id: `p${k}`, pairs, pending: null, rand: rng(cfg.SEED ^ Math.imul(k + 1, 0x9e3779b1)) });
    }
    const owners = new Set(producers.flatMap((p) => p.pairs.map((x) => x.stream)));
    assert.equal(owners.size, streams.length, 'every stream has a producer');

    const ctx = { server, stats, extra, problem, master, paceMs: cfg.PACE_MS, killed: false, abort: null,
                  backpressure };

    const rounds = [];
    let budgetReached = null;
    for (let round = 1; ; round++) {
        if (round > cfg.ROUNDS && (stats.unanswered > 0 || round > cfg.ROUNDS + MAX_EXTRA_ROUNDS)) break;
        if (Date.now() - t0 > cfg.TIME_BUDGET_MS) {
            budgetReached = `the time budget of ${cfg.TIME_BUDGET_MS} ms (${cfg.PREFIX}_TIME_BUDGET_MS) ` +
                `ran out after ${round - 1} of ${cfg.ROUNDS} rounds`;
            console.log(`${name}: ${budgetReached}`);
            break;
        }
        // New epochs for some producer/stream pairs (never for one with a write in doubt).
        if (round > 1) {
            for (const p of producers) {
                for (const pair of p.pairs) {
                    if (p.pending?.pair === pair) continue;
                    if (master.next() < EPOCH_BUMP_PROBABILITY) {
                        pair.epoch++;
                        pair.seq = 0;
                    }
                }
            }
        }
        // A quiet round writes to a quarter of the streams, past the idle sweep.
        const quiet = cfg.QUIET_EVERY > 0 && round % cfg.QUIET_EVERY === 3 % cfg.QUIET_EVERY;
        for (const st of streams) st.active = !quiet || master.next() < QUIET_STREAM_SHARE;
        if (quiet && !streams.some((st) => st.active)) streams[0].active = true;
        const killAt = roundMs ? roundMs(master, quiet)
            : quiet ? master.int(QUIET_KILL_MIN_MS, QUIET_KILL_MAX_MS) : master.int(KILL_MIN_MS, KILL_MAX_MS);
        const ackedBefore = stats.acknowledged;
        ctx.killed = false;
        const loops = producers.map((p) => producerLoop(ctx, p));
        if (load) loops.push(load.start(ctx));
        await sleep(killAt);
        // Half the kills land as a write leaves (in doubt, not yet at the
        // server); the others at the timer, where one that finds a write
        // at the server, taken and not answered, leaves it present.
        if (master.next() < 0.5) await justAfterASend(ctx);
        ctx.killNo = stats.kills + 1;
        ctx.killed = true;
        const killedAt = Date.now();
        await crash(server, round, extra);
        stats.kills++;
        await Promise.all(loops);
        const acked = stats.acknowledged - ackedBefore;
        const inDoubt = producers.filter((p) => p.pending?.lostAtKill === stats.kills).length;
        stats.unanswered += inDoubt;
        if (acked === 0) problem('roundsWithoutAcks', `round ${round}: no write was acknowledged in ${killAt} ms`);

        const restart = await server.start(server.port);
        if (!restart.ms) throw new Error(`restart ${round} failed: ${restart.failed}\n${server.tail()}`);
        stats.restartMsMax = Math.max(stats.restartMsMax, restart.ms);
        stats.downMsMax = Math.max(stats.downMsMax, Date.now() - killedAt);

        const v0 = Date.now();
        // Reads of at most 32 KiB .. 1 MiB here (the server's 8 MiB cap in the final check).
        await verifyAll(ctx, streams, producers,
                        { full: false, resolveInDoubt: true, maxBytes: master.int(32 << 10, 1 << 20) });
        if (load) await load.verify(ctx);
        stats.verifyMsMax = Math.max(stats.verifyMsMax, Date.now() - v0);
        rounds.push({ round, killAt, acked, inDoubt, restartMs: restart.ms });
        if (cfg.VERBOSE) {
            console.log(`round ${round}${quiet ? ' (quiet)' : ''}: crash at ${killAt} ms, ${acked} acknowledged, ` +
                        `${inDoubt} in doubt, restart ${restart.ms} ms`);
        }
        if (ctx.abort) break;
        await staleEpochProbe(ctx, producers, master);
    }

    // After the last crash: repeat the writes in doubt (200 if absent, 204 if
    // present), then verify everything from scratch.
    if (!ctx.abort) {
        ctx.killed = false;
        for (const st of streams) st.active = true;
        await Promise.all(producers.map((p) => producerLoop(ctx, p, { onlyPending: true })));
    }
    const vf = Date.now();
    stats.verified = 0;
    await verifyAll(ctx, streams, producers, { full: true, resolveInDoubt: false });
    if (load) await load.finish(ctx);
    const finalVerifyMs = Date.now() - vf;

    const elapsed = Date.now() - t0;
    const recov = server.recoveries;
    // What the server left on disk (figures only).
    const countFiles = (sub, re) => {
        try {
            return readdirSync(path.join(server.dir, sub), { recursive: true })
                .filter((f) => re.test(String(f))).length;
        } catch {
            return 0;
        }
    };
    const lastRecovery = recov[recov.length - 1];
    const extraText = Object.entries(extra).map(([k, v]) => ` ${k}=${v}`).join('');
    console.log(`${name}: kills=${stats.kills} acknowledged=${stats.acknowledged} verified=${stats.verified} ` +
        `losses=${stats.losses} duplicates=${stats.duplicates} restart_ms_max=${stats.restartMsMax} ` +
        `misplaced=${stats.misplaced} phantoms=${stats.phantoms} corrupt=${stats.corrupt} ` +
        `order_violations=${stats.orderViolations} retry_mismatches=${stats.retryMismatches} ` +
        `unexpected_answers=${stats.unexpectedAnswers} header_mismatches=${stats.headerMismatches} ` +
        `in_doubt=${stats.unanswered} in_doubt_present=${stats.unansweredPresent} ` +
        `in_doubt_absent=${stats.unansweredAbsent} retried_200=${stats.retried200} retried_204=${stats.retried204} ` +
        `lost_answer_retries=${stats.lostAnswerRetries} backpressure_refusals=${stats.backpressureRefusals} extra_rounds=${Math.max(0, stats.kills - cfg.ROUNDS)} ` +
        `stale_probes=${stats.staleProbes} transient_errors=${stats.transientErrors} ` +
        `torn_tails=${server.tornTails} down_ms_max=${stats.downMsMax} verify_ms_max=${stats.verifyMsMax} ` +
        `final_verify_ms=${finalVerifyMs} wal_records=${lastRecovery?.records ?? 0} ` +
        `wal_bytes=${lastRecovery?.bytes ?? 0} recover_ms_max=${Math.max(0, ...recov.map((r) => r.ms))} ` +
        `wal_segments=${countFiles('wal', /\.wal$/)} checkpoints=${countFiles('checkpoints', /\.ckpt$/)} ` +
        `chunk_objects=${countFiles('objects', /\d{20}-\d{20}$/)}${extraText} ` +
        `streams=${streams.length} producers=${cfg.PRODUCERS} seed=${cfg.SEED} elapsed_ms=${elapsed} ` +
        `server_args="${cfg.SERVER_ARGS.join(' ')}"`);
    if (problems.length) {
        console.log(`${name}: problems (the first 8 of each kind):\n  ${problems.join('\n  ')}`);
        console.log(`${name}: server log tail:\n${server.tail()}`);
    }

    const reproduce = `(reproduce with ${cfg.PREFIX}_SEED=${cfg.SEED}; schedules still depend on timing)`;
    const found = [...failing].map((kind) => `${kind}=${stats[kind]} (${PROBLEM_KINDS[kind] ?? 'see above'})`);
    assert.deepEqual(found, [], `${found.join(', ')} ${reproduce}`);
    assert.equal(stats.verified, stats.acknowledged, 'every acknowledged write verified');
    assert.ok(stats.kills >= cfg.ROUNDS, `every planned round ran: ${budgetReached ?? `${stats.kills} crashes`}`);
    assert.equal(rounds.length, stats.kills, 'every round restarted and verified');
    assert.ok(stats.lostAnswerRetries >= 1,
              `no write whose answer a crash lost was repeated and answered (in_doubt=${stats.unanswered}) ${reproduce}`);
}

function sha256(buf) {
    return createHash('sha256').update(buf).digest('hex');
}

// ---------------------------------------------------------------- producers

function newWrite(p) {
    const pairs = p.pairs.filter((x) => x.stream.active);
    if (!pairs.length) return null;
    const pair = pairs[p.rand.int(0, pairs.length - 1)];
    const len = p.rand.int(1, MAX_LEN);
    const { body, stored } = makeMessage(pair.stream, p.k, pair.epoch, pair.seq, len);
    return { pair, stream: pair.stream, epoch: pair.epoch, seq: pair.seq, len, body, storedSize: stored.length,
             attempts: 0, doubt: null };
}

async function producerLoop(ctx, p, { onlyPending = false } = {}) {
    const { stats, problem } = ctx;
    let failuresInARow = 0;
    while (!ctx.killed && !ctx.abort) {
        if (!p.pending) {
            if (onlyPending) return;
            p.pending = newWrite(p);
            if (!p.pending) return;  // none of its streams is written this round
        }
        const w = p.pending;
        if (!w.stream.active) return;  // repeated in a round that writes to its stream
        const url = ctx.server.url + w.stream.path;
        w.attempts++;
        let res;
        try {
            const answer = fetch(url, {
                method: 'POST',
                headers: {
                    'Content-Type': w.stream.contentType,
                    'Producer-Id': p.id,
                    'Producer-Epoch': String(w.epoch),
                    'Producer-Seq': String(w.seq),
                },
                body: w.body,
                signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
            });
            ctx.sent?.();
            res = await answer;
        } catch (err) {
            if (ctx.killed) {
                w.lostAtKill = ctx.killNo;
                return;  // the answer is lost: the write stays in doubt
            }
            if (err.name === 'TimeoutError') {
                problem('unexpectedAnswers', `${p.id} ${w.stream.path} e${w.epoch} s${w.seq}: no answer in ${REQUEST_TIMEOUT_MS} ms`);
                ctx.abort = true;
                return;
            }
            // Not ours: e.g. a pooled connection to the previous process. Repeat
            // it; it may have been applied.
            stats.transientErrors++;
            w.uncertain = true;
            if (++failuresInARow > 50) {
                problem('unexpectedAnswers', `${p.id} ${w.stream.path}: ${failuresInARow} network failures: ${err.cause?.message ?? err.message}`);
                ctx.abort = true;
                return;
            }
            await sleep(20);
            continue;
        }
        failuresInARow = 0;
        const status = res.status;
        const h = (name) => res.headers.get(name);
        let text = '';
        try { text = await res.text(); } catch { /* the answer's status is what counts */ }
        const tag = `${p.id} ${w.stream.path} e${w.epoch} s${w.seq}`;
        if (ctx.backpressure && await refusedForBackpressure(ctx, status, text, h('retry-after'))) continue;
        if (status !== 200 && status !== 204) {
            problem('unexpectedAnswers', `${tag} attempt ${w.attempts}: ${status} ${text.slice(0, 200)}`);
            ctx.abort = true;
            return;
        }
        // Answered: acknowledged.
        const start = Number(h('stream-offset'));
        const end = Number(h('stream-next-offset'));
        if (!Number.isSafeInteger(start) || !Number.isSafeInteger(end) || end - start !== w.storedSize ||
            h('producer-epoch') !== String(w.epoch) || h('producer-seq') !== String(w.seq)) {
            problem('headerMismatches', `${tag}: ${status} Stream-Offset=${h('stream-offset')} ` +
                `Stream-Next-Offset=${h('stream-next-offset')} Producer-Epoch=${h('producer-epoch')} ` +
                `Producer-Seq=${h('producer-seq')}; ${w.storedSize} bytes written`);
        }
        if (w.doubt) {
            // A write in doubt over a crash: the verification saw it present or absent.
            if (status === 204) stats.retried204++; else stats.retried200++;
            // Its answer was lost to the crash (not a request that never left).
            if (w.lostAtKill !== undefined) stats.lostAnswerRetries++;
            if (w.doubt.present && (status !== 204 || start !== w.doubt.start || end !== w.doubt.end)) {
                problem('retryMismatches', `${tag}: present at [${w.doubt.start},${w.doubt.end}) after the crash ` +
                    `but the repeat answered ${status} [${start},${end})`);
            } else if (!w.doubt.present && status !== 200) {
                problem('retryMismatches', `${tag}: absent after the crash but the repeat answered ${status} [${start},${end})`);
            }
        } else if (!w.uncertain && status !== 200) {
            // Its first attempt, or the first after refusals that applied nothing.
            problem('retryMismatches', `${tag}: a new write answered ${status} (attempt ${w.attempts})`);
        }
        w.stream.acked.push({ k: p.k, e: w.epoch, s: w.seq, len: w.len, start, end });
        stats.acknowledged++;
        w.pair.seq++;
        p.pending = null;
        if (ctx.paceMs) await sleep(p.rand.int(0, 2 * ctx.paceMs));
    }
}

// Resolves as a producer hands a write to fetch (or after 200 ms without
// one). The server answers a write within a millisecond or so, and this
// process, reading 32 producers' answers, is the slower side: a kill at any
// moment of a timer finds every write the server took answered already, the
// answers waiting in this process's sockets, and no write in doubt. A kill
// as a write leaves finds it on its way.
function justAfterASend(ctx) {
    return new Promise((resolve) => {
        const done = () => {
            ctx.sent = null;
            clearTimeout(timer);
            resolve();
        };
        const timer = setTimeout(done, 200);
        ctx.sent = done;
    });
}

// Whether the answer is a backpressure refusal (counted); it then waits for
// its Retry-After (at most a second: the refusal says when to come back, the
// test keeps its rounds short).
async function refusedForBackpressure(ctx, status, text, retryAfter) {
    if (status !== 503) return false;
    let code = null;
    try { code = JSON.parse(text).error?.code; } catch { /* not the error body */ }
    if (code !== 'COLD_BACKPRESSURE') return false;
    if (!/^[1-9][0-9]*$/.test(retryAfter ?? '')) {
        ctx.problem('unexpectedAnswers', `a 503 COLD_BACKPRESSURE with Retry-After ${retryAfter}`);
    }
    ctx.stats.backpressureRefusals++;
    await sleep(Math.min(1000, Number(retryAfter) * 1000 || 1000) * (0.5 + Math.random() / 2));
    return true;
}

// A write with the producer's previous epoch must be refused with 403 after a
// restart: the epoch survived.
async function staleEpochProbe(ctx, producers, master) {
    const candidates = [];
    for (const p of producers) {
        for (const pair of p.pairs) {
            if (pair.epoch >= 1 && pair.seq >= 1 && p.pending?.pair !== pair) candidates.push({ p, pair });
        }
    }
    if (!candidates.length) return;
    const { p, pair } = candidates[master.int(0, candidates.length - 1)];
    const staleSeq = 99_999_999;  // never used: if applied, the verification sees a phantom
    const { body } = makeMessage(pair.stream, p.k, pair.epoch - 1, staleSeq, 16);
    let res;
    let text;
    do {
        res = await fetch(ctx.server.url + pair.stream.path, {
            method: 'POST',
            headers: { 'Content-Type': pair.stream.contentType, 'Producer-Id': p.id,
                       'Producer-Epoch': String(pair.epoch - 1), 'Producer-Seq': String(staleSeq) },
            body,
            signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
        });
        text = await res.text();
    } while (ctx.backpressure && await refusedForBackpressure(ctx, res.status, text, res.headers.get('retry-after')));
    ctx.stats.staleProbes++;
    if (res.status !== 403 || res.headers.get('producer-epoch') !== String(pair.epoch)) {
        ctx.problem('unexpectedAnswers', `stale epoch ${pair.epoch - 1} of ${p.id} on ${pair.stream.path} ` +
            `(current ${pair.epoch}) answered ${res.status} Producer-Epoch=${res.headers.get('producer-epoch')} ${text.slice(0, 200)}`);
    }
}

// ---------------------------------------------------------------- verification

// The stored bytes of a stream, following Stream-Next-Offset to the tail.
// maxBytes (optional) asks for smaller reads, so that reads end inside messages.
async function readAll(ctx, st, maxBytes) {
    const parts = [];
    let offset = '-1';
    let at = 0;
    const cap = maxBytes ? `&max_bytes=${maxBytes}` : '';
    for (let i = 0; ; i++) {
        if (i > 100_000) throw new Error(`${st.path}: read does not converge`);
        const target = `${ctx.server.url}${st.path}?offset=${offset}${cap}`;
        let res;
        let body;
        try {
            res = await fetch(target, { signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
            body = Buffer.from(await res.arrayBuffer());
        } catch (err) {
            throw new Error(`GET ${target} failed: ${err.message} (${err.cause?.code ?? ''} ${err.cause?.message ?? ''}); ` +
                            `server ${ctx.server.alive() ? 'running' : `exited ${JSON.stringify(ctx.server.child?.exited)}`}` +
                            `\n${ctx.server.tail()}`);
        }
        if (res.status !== 200) throw new Error(`${st.path}?offset=${offset}: ${res.status} ${body.toString().slice(0, 200)}`);
        const next = res.headers.get('stream-next-offset');
        const nextN = Number(next);
        let stored = body;
        if (st.json) {
            // /v1 answers a JSON array; the stored text has one LF after each message.
            const text = body.toString('latin1');
            if (text[0] !== '[' || text[text.length - 1] !== ']') {
                throw new Error(`${st.path}: a JSON read is not an array: ${text.slice(0, 80)}`);
            }
            const inner = text.slice(1, -1);
            stored = inner.length ? Buffer.from(inner.split('},{').join('}\n{') + '\n', 'latin1') : Buffer.alloc(0);
        }
        if (nextN - at !== stored.length) {
            ctx.problem('corrupt', `${st.path}?offset=${offset}: ${stored.length} bytes but the offset moved ${at} -> ${nextN}`);
        }
        parts.push(stored);
        at = nextN;
        offset = next;
        if (res.headers.get('stream-up-to-date') === 'true') break;
        if (stored.length === 0) throw new Error(`${st.path}: an empty read that is not up to date`);
    }
    return Buffer.concat(parts);
}

async function verifyAll(ctx, streams, producers, opts) {
    const queue = [...streams];
    const found = new Map();  // stream -> Map(key -> {start, end, len})
    await Promise.all(Array.from({ length: READ_CONCURRENCY }, async () => {
        while (queue.length) {
            const st = queue.shift();
            found.set(st, await verifyStream(ctx, st, opts));
        }
    }));

    // Writes in doubt: decide what their repeat must be answered.
    const doubtKeys = new Map();  // stream -> Set(key)
    for (const p of producers) {
        const w = p.pending;
        if (!w) continue;
        const key = `${p.k}|${w.epoch}|${w.seq}`;
        if (!doubtKeys.has(w.stream)) doubtKeys.set(w.stream, new Set());
        doubtKeys.get(w.stream).add(key);
        const m = found.get(w.stream).get(key);
        if (m && m.len !== w.len) {
            ctx.problem('corrupt', `${w.stream.path}: write in doubt ${key} present with length ${m.len}, written with ${w.len}`,
                        `${w.stream.path} ${key}`);
        }
        if (opts.resolveInDoubt) {
            w.doubt = m ? { present: true, start: m.start, end: m.end } : { present: false };
            if (w.lostAtKill === ctx.stats.kills) {
                if (m) ctx.stats.unansweredPresent++; else ctx.stats.unansweredAbsent++;
            }
        }
    }

    // Every message present was acknowledged or is in doubt.
    for (const st of streams) {
        const ackedKeys = new Set(st.acked.map((a) => `${a.k}|${a.e}|${a.s}`));
        const doubt = doubtKeys.get(st) ?? new Set();
        for (const [key, m] of found.get(st)) {
            if (!ackedKeys.has(key) && !doubt.has(key)) {
                ctx.problem('phantoms', `${st.path}: message ${key} at [${m.start},${m.end}) was neither acknowledged nor in doubt`,
                            `${st.path} ${key}`);
            }
        }
    }
}

// Parses a stream, checks its acknowledged writes; returns Map(key -> message).
async function verifyStream(ctx, st, { full, maxBytes }) {
    const { problem, stats } = ctx;
    const bytes = await readAll(ctx, st, maxBytes);
    let at = 0;
    let msgs = [];
    if (!full && st.prefix.len > 0) {
        // The prefix was fully checked before: it must be byte-identical now.
        if (bytes.length < st.prefix.len || sha256(bytes.subarray(0, st.prefix.len)) !== st.prefix.digest) {
            problem('corrupt', `${st.path}: the first ${st.prefix.len} bytes, verified earlier, changed (now ${bytes.length} bytes)`);
        } else {
            at = st.prefix.len;
            msgs = st.prefix.msgs.slice();
        }
    }
    if (at === 0) msgs = [];
    while (at < bytes.length) {
        const m = parseMessage(st, bytes, at);
        if (m.error) {
            problem('corrupt', `${st.path} at offset ${at} of ${bytes.length}: ${m.error}`, `${st.path} ${at}`);
            break;
        }
        msgs.push({ k: m.k, e: m.e, s: m.s, len: m.len, start: at, end: at + m.size });
        at += m.size;
    }
    st.prefix = { len: at, digest: sha256(bytes.subarray(0, at)), msgs };

    const byKey = new Map();
    const lastByProducer = new Map();
    for (const m of msgs) {
        const key = `${m.k}|${m.e}|${m.s}`;
        if (byKey.has(key)) {
            problem('duplicates', `${st.path}: message ${key} at [${byKey.get(key).start},${byKey.get(key).end}) and again at [${m.start},${m.end})`,
                    `${st.path} ${key} ${m.start}`);
            continue;
        }
        byKey.set(key, m);
        const last = lastByProducer.get(m.k);
        if (last && (m.e < last.e || (m.e === last.e && m.s <= last.s))) {
            problem('orderViolations', `${st.path}: producer p${m.k} e${m.e} s${m.s} at ${m.start} follows e${last.e} s${last.s}`,
                    `${st.path} ${key}`);
        }
        lastByProducer.set(m.k, m);
    }

    const lastAckEnd = new Map();
    for (const a of st.acked) {
        const key = `${a.k}|${a.e}|${a.s}`;
        const m = byKey.get(key);
        if (!m) {
            problem('losses', `${st.path}: acknowledged write ${key} [${a.start},${a.end}) is missing (stream has ${bytes.length} bytes)`,
                    `${st.path} ${key}`);
            continue;
        }
        if (m.start !== a.start || m.end !== a.end || m.len !== a.len) {
            problem('misplaced', `${st.path}: write ${key} acknowledged at [${a.start},${a.end}) is at [${m.start},${m.end})`,
                    `${st.path} ${key}`);
            continue;
        }
        const prev = lastAckEnd.get(a.k);
        if (prev !== undefined && a.start < prev) {
            problem('orderViolations', `${st.path}: p${a.k}'s acknowledged write ${key} at ${a.start} precedes its earlier one ending at ${prev}`,
                    `${st.path} ack ${key}`);
        }
        lastAckEnd.set(a.k, a.end);
        if (full) stats.verified++;
    }
    return byKey;
}
