// Crash test of the durable server: SIGKILL under concurrent idempotent
// producers, restart on the same data dir, verify every acknowledged write.
//
//   DSTREAM_BIN=build/dstream node --test tests/crash/kill9.test.mjs
//
// Each round: producers append until a SIGKILL at a random moment; the server
// restarts on the same --data-dir and port; every stream is read back whole and
// checked: each acknowledged write (answer 200, or 204 for a repeat) is present
// exactly once, at the offsets it was acknowledged with, with identical bytes,
// in acknowledgement order per producer; the stream parses as whole messages
// only; a write whose answer was lost may be there or not, but whole. Producers
// that lost an answer then repeat that write with the same (epoch, seq): the
// server must answer 200 if it is absent and 204 (same offsets) if present.
//
// One round in QUIET_EVERY (rounds 3, 8, 13, 18 by default) is quiet: it lasts
// past the server's 5 s idle sweep (which checkpoints every group) and writes
// to a quarter of the streams only, so that some groups go idle, get
// checkpointed and lose their WAL segments before the kill; the next rounds
// write to them again. With the small thresholds of SERVER_ARGS, WAL segments
// roll and are deleted, groups checkpoint and hot tails flush to chunk files
// all through the test.
//
// Environment: DSTREAM_BIN (required), CRASH_ROUNDS (kills, default 20),
// CRASH_TIME_BUDGET_MS (rounds stop starting after it, default 120000),
// CRASH_SEED (default random; printed), CRASH_STREAMS, CRASH_JSON_STREAMS,
// CRASH_PRODUCERS, CRASH_SERVER_ARGS (extra `dstream serve` flags; empty for
// the server's defaults), CRASH_QUIET_EVERY (0: no long rounds),
// CRASH_KEEP_DIR=1 (keep the data dir on failure), CRASH_VERBOSE=1.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { createHash, randomInt } from 'node:crypto';
import { existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

const envInt = (name, dflt) => {
    const v = process.env[name];
    if (v === undefined || v === '') return dflt;
    const n = Number.parseInt(v, 10);
    if (!Number.isFinite(n) || n < 0) throw new Error(`${name}=${v} is not a non-negative integer`);
    return n;
};

const ROUNDS = envInt('CRASH_ROUNDS', 20);
const TIME_BUDGET_MS = envInt('CRASH_TIME_BUDGET_MS', 120_000);
const OCTET_STREAMS = envInt('CRASH_STREAMS', 40);
const JSON_STREAMS = envInt('CRASH_JSON_STREAMS', 4);
const PRODUCERS = envInt('CRASH_PRODUCERS', 32);
const STREAMS_PER_PRODUCER = 3;
const SEED = envInt('CRASH_SEED', randomInt(1, 2 ** 31));
const KILL_MIN_MS = 100;
const KILL_MAX_MS = 1500;
const QUIET_EVERY = envInt('CRASH_QUIET_EVERY', 5);
const QUIET_KILL_MIN_MS = 5600;  // the server's idle sweep runs every 5 s
const QUIET_KILL_MAX_MS = 6500;
const QUIET_STREAM_SHARE = 0.25;
const SERVER_ARGS = (process.env.CRASH_SERVER_ARGS ??
    '--wal-segment-bytes 262144 --checkpoint-bytes 262144 --hot-bytes 1048576')
    .split(/\s+/).filter(Boolean);
const MAX_LEN = 4096;
const EPOCH_BUMP_PROBABILITY = 0.15;
const READ_CONCURRENCY = 8;
const START_TIMEOUT_MS = 60_000;
const REQUEST_TIMEOUT_MS = 30_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// ---------------------------------------------------------------- randomness

// mulberry32: small, seedable, good enough for schedules and lengths.
function rng(seed) {
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
function makeMessage(stream, k, e, s, len) {
    if (stream.json) {
        const text = jsonText(stream.si, k, e, s, len);
        return { body: text, stored: Buffer.from(text + '\n', 'latin1') };
    }
    const body = octetBody(stream.si, k, e, s, len);
    return { body, stored: body };
}

// Parses the whole message at `at` of the stored bytes `buf`:
// {k, e, s, len, size} or {error}.
function parseMessage(stream, buf, at) {
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

// ---------------------------------------------------------------- server

function freePort() {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.unref();
        s.on('error', reject);
        s.listen(0, '127.0.0.1', () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });
}

async function answers(url) {
    try {
        const res = await fetch(url + '/', { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        return true;
    } catch {
        return false;
    }
}

class Server {
    constructor(bin, dir) {
        this.bin = bin;
        this.dir = dir;
        this.child = null;
        this.exit = null;
        this.log = '';
        this.tornTails = 0;
        this.recoveries = [];
    }

    get url() {
        return `http://127.0.0.1:${this.port}`;
    }

    // Starts the server and waits until it answers; resolves to the ms it took
    // or {failed} if it exited first.
    async start(port) {
        this.port = port;
        const started = Date.now();
        const child = spawn(this.bin, ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', this.dir,
                                       '--log-level', 'info', ...SERVER_ARGS],
                            { stdio: ['ignore', 'pipe', 'pipe'] });
        this.child = child;
        this.exit = new Promise((resolve) => child.on('exit', (code, signal) => {
            child.exited = { code, signal };
            resolve(child.exited);
        }));
        let lineBuf = '';
        const keep = (chunk) => {
            const text = chunk.toString();
            this.log += text;
            if (this.log.length > 256 * 1024) this.log = this.log.slice(-128 * 1024);
            lineBuf += text;
            const lines = lineBuf.split('\n');
            lineBuf = lines.pop();
            for (const line of lines) {
                if (line.includes('cutting a torn tail')) this.tornTails++;
                const m = /recovered (\d+) log records \((\d+) bytes, (\d+) segments\) in (\d+) ms/.exec(line);
                if (m) this.recoveries.push({ records: +m[1], bytes: +m[2], segments: +m[3], ms: +m[4] });
            }
        };
        child.stdout.on('data', keep);
        child.stderr.on('data', keep);
        const deadline = started + START_TIMEOUT_MS;
        while (true) {
            if (child.exited) return { failed: `server exited ${JSON.stringify(child.exited)} before answering` };
            if (await answers(this.url)) return { ms: Date.now() - started };
            if (Date.now() > deadline) {
                throw new Error(`server did not answer on ${this.url} within ${START_TIMEOUT_MS} ms`);
            }
            await sleep(10);
        }
    }

    alive() {
        return this.child !== null && !this.child.exited;
    }

    async kill9() {
        if (!this.alive()) {
            throw new Error(`the server died before this test killed it: ${JSON.stringify(this.child?.exited)}` +
                            ` (a signal this test did not send, or a crash)\n${this.tail()}`);
        }
        this.child.kill('SIGKILL');
        const how = await this.exit;
        if (how.signal !== 'SIGKILL') throw new Error(`server exited on its own before the kill: ${JSON.stringify(how)}`);
    }

    // Best effort, for cleanup.
    async stop() {
        if (!this.alive()) return;
        this.child.kill('SIGKILL');
        let timer;
        await Promise.race([this.exit, new Promise((r) => { timer = setTimeout(r, 5000); })]);
        clearTimeout(timer);
    }

    tail(n = 4000) {
        return this.log.slice(-n);
    }
}

// ---------------------------------------------------------------- the test

test('kill -9 under concurrent idempotent producers loses and duplicates nothing', { timeout: 560_000 },
    async () => {
        const bin = process.env.DSTREAM_BIN;
        assert.ok(bin, 'DSTREAM_BIN is not set: point it at the dstream binary');
        assert.ok(existsSync(bin), `DSTREAM_BIN=${bin} does not exist`);

        const dir = mkdtempSync(path.join(os.tmpdir(), 'crash-kill9-'));
        const server = new Server(bin, dir);
        const killOnExit = () => { try { server.child?.kill('SIGKILL'); } catch { /* gone */ } };
        process.on('exit', killOnExit);
        let passed = false;
        try {
            await run(server);
            passed = true;
        } finally {
            await server.stop();
            process.off('exit', killOnExit);
            if (passed || process.env.CRASH_KEEP_DIR !== '1') {
                rmSync(dir, { recursive: true, force: true });
            } else {
                console.log(`crash_kill9: data dir kept at ${dir}`);
            }
        }
    });

async function run(server) {
    const t0 = Date.now();
    const master = rng(SEED);
    const stats = {
        kills: 0, acknowledged: 0, verified: 0, losses: 0, duplicates: 0, misplaced: 0, phantoms: 0,
        corrupt: 0, orderViolations: 0, retryMismatches: 0, unexpectedAnswers: 0, headerMismatches: 0,
        unanswered: 0, unansweredPresent: 0, unansweredAbsent: 0, retried200: 0, retried204: 0,
        transientErrors: 0, staleProbes: 0, restartMsMax: 0, downMsMax: 0, verifyMsMax: 0,
        roundsWithoutAcks: 0,
    };
    const problems = [];
    const seen = new Set();
    // `id` names the fault, so that one fault seen by several verifications counts once.
    const problem = (kind, text, id = null) => {
        if (id !== null) {
            if (seen.has(`${kind} ${id}`)) return;
            seen.add(`${kind} ${id}`);
        }
        stats[kind]++;
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
    for (let i = 0; i < OCTET_STREAMS; i++) {
        streams.push({ si: streams.length, json: false, path: `/crash-test/s${i}`,
                       contentType: 'application/octet-stream' });
    }
    for (let i = 0; i < JSON_STREAMS; i++) {
        streams.push({ si: streams.length, json: true, path: `/v1/stream/crash-test-j${i}`,
                       contentType: 'application/json' });
    }
    for (const st of streams) {
        st.acked = [];  // in acknowledgement order: {k, e, s, len, start, end}
        st.prefix = { len: 0, digest: sha256(Buffer.alloc(0)), msgs: [] };
        const res = await fetch(server.url + st.path, { method: 'PUT', headers: { 'Content-Type': st.contentType } });
        await res.arrayBuffer();
        assert.equal(res.status, 201, `create ${st.path}`);
    }

    // Producers: producer k owns streams (k + j*PRODUCERS) mod S, j < STREAMS_PER_PRODUCER,
    // with its own (epoch, seq) per stream. Streams are shared by 2-3 producers.
    const producers = [];
    for (let k = 0; k < PRODUCERS; k++) {
        const pairs = [];
        for (let j = 0; j < STREAMS_PER_PRODUCER; j++) {
            const stream = streams[(k + j * PRODUCERS) % streams.length];
            if (!pairs.some((p) => p.stream === stream)) pairs.push({ stream, epoch: 0, seq: 0 });
        }
        producers.push({ k, id: `p${k}`, pairs, pending: null, rand: rng(SEED ^ Math.imul(k + 1, 0x9e3779b1)) });
    }
    const owners = new Set(producers.flatMap((p) => p.pairs.map((x) => x.stream)));
    assert.equal(owners.size, streams.length, 'every stream has a producer');

    const ctx = { server, stats, problem, killed: false, abort: null };

    const rounds = [];
    for (let round = 1; round <= ROUNDS; round++) {
        if (Date.now() - t0 > TIME_BUDGET_MS) {
            console.log(`crash_kill9: time budget of ${TIME_BUDGET_MS} ms reached after ${round - 1} kills`);
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
        const quiet = QUIET_EVERY > 0 && round % QUIET_EVERY === 3 % QUIET_EVERY;
        for (const st of streams) st.active = !quiet || master.next() < QUIET_STREAM_SHARE;
        if (quiet && !streams.some((st) => st.active)) streams[0].active = true;
        const killAt = quiet ? master.int(QUIET_KILL_MIN_MS, QUIET_KILL_MAX_MS) : master.int(KILL_MIN_MS, KILL_MAX_MS);
        const ackedBefore = stats.acknowledged;
        ctx.killed = false;
        const loops = producers.map((p) => producerLoop(ctx, p));
        await sleep(killAt);
        ctx.killNo = stats.kills + 1;
        ctx.killed = true;
        const killedAt = Date.now();
        await server.kill9();
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
        stats.verifyMsMax = Math.max(stats.verifyMsMax, Date.now() - v0);
        rounds.push({ round, killAt, acked, inDoubt, restartMs: restart.ms });
        if (process.env.CRASH_VERBOSE) {
            console.log(`round ${round}${quiet ? ' (quiet)' : ''}: kill at ${killAt} ms, ${acked} acknowledged, ` +
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
    console.log(`crash_kill9: kills=${stats.kills} acknowledged=${stats.acknowledged} verified=${stats.verified} ` +
        `losses=${stats.losses} duplicates=${stats.duplicates} restart_ms_max=${stats.restartMsMax} ` +
        `misplaced=${stats.misplaced} phantoms=${stats.phantoms} corrupt=${stats.corrupt} ` +
        `order_violations=${stats.orderViolations} retry_mismatches=${stats.retryMismatches} ` +
        `unexpected_answers=${stats.unexpectedAnswers} header_mismatches=${stats.headerMismatches} ` +
        `in_doubt=${stats.unanswered} in_doubt_present=${stats.unansweredPresent} ` +
        `in_doubt_absent=${stats.unansweredAbsent} retried_200=${stats.retried200} retried_204=${stats.retried204} ` +
        `stale_probes=${stats.staleProbes} transient_errors=${stats.transientErrors} ` +
        `torn_tails=${server.tornTails} down_ms_max=${stats.downMsMax} verify_ms_max=${stats.verifyMsMax} ` +
        `final_verify_ms=${finalVerifyMs} wal_records=${lastRecovery?.records ?? 0} ` +
        `wal_bytes=${lastRecovery?.bytes ?? 0} recover_ms_max=${Math.max(0, ...recov.map((r) => r.ms))} ` +
        `wal_segments=${countFiles('wal', /\.wal$/)} checkpoints=${countFiles('checkpoints', /\.ckpt$/)} ` +
        `chunk_objects=${countFiles('objects', /\d{20}-\d{20}$/)} ` +
        `streams=${streams.length} producers=${PRODUCERS} seed=${SEED} elapsed_ms=${elapsed} ` +
        `server_args="${SERVER_ARGS.join(' ')}"`);
    if (problems.length) {
        console.log(`crash_kill9: problems (the first 8 of each kind):\n  ${problems.join('\n  ')}`);
        console.log(`crash_kill9: server log tail:\n${server.tail()}`);
    }

    const reproduce = `(reproduce with CRASH_SEED=${SEED}; schedules still depend on timing)`;
    assert.ok(stats.kills >= 1, 'at least one kill');
    assert.equal(stats.losses, 0, `acknowledged writes lost ${reproduce}`);
    assert.equal(stats.duplicates, 0, `writes present more than once ${reproduce}`);
    assert.equal(stats.misplaced, 0, `writes not at their acknowledged offsets ${reproduce}`);
    assert.equal(stats.corrupt, 0, `streams that do not parse as whole messages ${reproduce}`);
    assert.equal(stats.phantoms, 0, `messages nobody wrote or nobody is in doubt about ${reproduce}`);
    assert.equal(stats.orderViolations, 0, `per-producer order broken ${reproduce}`);
    assert.equal(stats.retryMismatches, 0, `repeats of writes in doubt answered wrongly ${reproduce}`);
    assert.equal(stats.unexpectedAnswers, 0, `unexpected answers ${reproduce}`);
    assert.equal(stats.headerMismatches, 0, `write answers with wrong offsets ${reproduce}`);
    assert.equal(stats.roundsWithoutAcks, 0, 'every round acknowledged at least one write');
    assert.equal(stats.verified, stats.acknowledged, 'every acknowledged write verified');
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
            res = await fetch(url, {
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
            // Not ours: e.g. a pooled connection to the previous process. Repeat it.
            stats.transientErrors++;
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
            if (w.doubt.present && (status !== 204 || start !== w.doubt.start || end !== w.doubt.end)) {
                problem('retryMismatches', `${tag}: present at [${w.doubt.start},${w.doubt.end}) after the crash ` +
                    `but the repeat answered ${status} [${start},${end})`);
            } else if (!w.doubt.present && status !== 200) {
                problem('retryMismatches', `${tag}: absent after the crash but the repeat answered ${status} [${start},${end})`);
            }
        } else if (w.attempts === 1 && status !== 200) {
            problem('retryMismatches', `${tag}: first attempt of a new write answered ${status}`);
        }
        w.stream.acked.push({ k: p.k, e: w.epoch, s: w.seq, len: w.len, start, end });
        stats.acknowledged++;
        w.pair.seq++;
        p.pending = null;
    }
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
    const res = await fetch(ctx.server.url + pair.stream.path, {
        method: 'POST',
        headers: { 'Content-Type': pair.stream.contentType, 'Producer-Id': p.id,
                   'Producer-Epoch': String(pair.epoch - 1), 'Producer-Seq': String(staleSeq) },
        body,
        signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS),
    });
    const text = await res.text();
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
