// The soak's traffic beside the crash rounds' producers (soak.mjs): appends
// without producer headers, live readers (SSE and long-poll), snapshots and
// forks, each checked after every restart against what the server answered:
//
// - plain appends: every acknowledged one is at the offsets of its answer,
//   once; the only other messages are ones whose answer a restart cut off;
// - live readers: what a reader was sent is the stream's prefix, byte for
//   byte: a live reader only ever sees applied, hence durable, bytes;
// - snapshots: the latest acknowledged one reads back whole and by range
//   (unless a later publish whose answer was lost replaced it);
// - forks: a fork reads as its source below the fork offset, then its own
//   acknowledged appends.
//
// Plain streams are text/plain and hold the crash rounds' JSON-text messages
// (one LF-terminated line each), so that SSE carries them as text.
import { createHash } from 'node:crypto';

import { makeMessage, parseMessage } from '../crash/lib/crash_rounds.mjs';

const REQUEST_TIMEOUT_MS = 30_000;
const LONG_POLL_MS = 2000;
const SNAPSHOT_EVERY_MS = 4000;
const FORK_EVERY_MS = 10_000;
const COLD_SNAPSHOT_BYTES = 1536 * 1024;  // above the 1 MiB inline limit: an object file
const TEXT = 'text/plain';

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Sleeps `ms`, or less once the round ends: a crash must not wait for a pause.
async function pause(ctx, ms) {
    for (const until = Date.now() + ms; !ctx.killed && Date.now() < until;) {
        await sleep(Math.min(100, until - Date.now()));
    }
}
const offsetToken = (n) => String(n).padStart(20, '0');
const sha256 = (buf) => createHash('sha256').update(buf).digest('hex');

async function request(url, init = {}) {
    const res = await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_TIMEOUT_MS) });
    const body = Buffer.from(await res.arrayBuffer());
    return { res, body };
}

// A stream's bytes from its start to its tail.
async function readWhole(url) {
    const parts = [];
    let offset = '-1';
    for (let i = 0; i < 100_000; i++) {
        const { res, body } = await request(`${url}?offset=${offset}`);
        if (res.status !== 200) throw new Error(`GET ${url}?offset=${offset}: ${res.status} ${body.toString().slice(0, 200)}`);
        parts.push(body);
        offset = res.headers.get('stream-next-offset');
        if (res.headers.get('stream-up-to-date') === 'true') return Buffer.concat(parts);
    }
    throw new Error(`${url}: a read that does not converge`);
}

async function tail(url) {
    const { res } = await request(url, { method: 'HEAD' });
    return Number(res.headers.get('stream-next-offset'));
}

// Deterministic bytes of a snapshot, a function of where it was published.
function snapshotBody(path, offset, size) {
    const seed = Buffer.from(sha256(`${path}@${offset}`), 'hex');
    const out = Buffer.alloc(size);
    for (let at = 0; at < size; at += seed.length) seed.copy(out, at);
    return out;
}

export class SideLoad {
    constructor({ plainStreams = 4, paceMs = 200, rand }) {
        this.rand = rand;
        this.paceMs = paceMs;
        this.plain = Array.from({ length: plainStreams }, (_, i) => ({
            si: 1000 + i, k: 900 + i, json: true, path: `/soak-plain/a${i}`,
            seq: 0, acked: [], doubt: new Set(),
            snapshot: null, snapshotInDoubt: null,
        }));
        this.readers = this.plain.flatMap((st) => ['sse', 'long-poll'].map((kind) => ({
            kind, stream: st, seen: Buffer.alloc(0), reconnects: 0,
        })));
        this.forks = [];
        this.created = false;
        this.figures = { plain_acked: 0, live_bytes: 0, live_reconnects: 0, snapshots: 0,
                         cold_snapshots: 0, snapshot_checks: 0, forks: 0, fork_checks: 0 };
    }

    // One round of traffic; settles once ctx.killed.
    async start(ctx) {
        if (!this.created) {
            for (const st of this.plain) {
                const { res } = await request(ctx.server.url + st.path, { method: 'PUT', headers: { 'Content-Type': TEXT } });
                if (res.status !== 201) throw new Error(`create ${st.path}: ${res.status}`);
            }
            this.created = true;
        }
        await Promise.all([
            ...this.plain.map((st) => this.#append(ctx, st)),
            ...this.readers.map((r) => (r.kind === 'sse' ? this.#followSse(ctx, r) : this.#longPoll(ctx, r))),
            this.#snapshots(ctx),
            this.#forks(ctx),
        ]);
    }

    async verify(ctx) {
        const whole = new Map();
        for (const st of this.plain) whole.set(st, await readWhole(ctx.server.url + st.path));
        for (const st of this.plain) this.#checkPlain(ctx, st, whole.get(st));
        for (const r of this.readers) {
            const bytes = whole.get(r.stream);
            if (r.seen.length > bytes.length || !bytes.subarray(0, r.seen.length).equals(r.seen)) {
                ctx.problem('liveReadMismatches', `${r.kind} reader of ${r.stream.path}: the ${r.seen.length} bytes it was sent ` +
                            `are not the stream's first bytes (the stream has ${bytes.length})`, `${r.kind} ${r.stream.path}`);
            }
        }
        for (const st of this.plain) await this.#checkSnapshot(ctx, st);
        for (const f of this.forks) await this.#checkFork(ctx, f, whole.get(f.source));
    }

    async finish(ctx) {
        await this.verify(ctx);
        this.figures.live_bytes = this.readers.reduce((n, r) => n + r.seen.length, 0);
        Object.assign(ctx.extra, this.figures);
    }

    // ------------------------------------------------------------ plain appends

    async #append(ctx, st) {
        while (!ctx.killed) {
            const len = this.rand.int(1, 2048);
            const { stored } = makeMessage(st, st.k, 0, st.seq, len);
            let answer;
            try {
                answer = await request(ctx.server.url + st.path,
                                       { method: 'POST', headers: { 'Content-Type': TEXT }, body: stored });
            } catch {
                // No answer: it may have applied. A plain append is never repeated.
                st.doubt.add(st.seq++);
                if (ctx.killed) return;
                continue;
            }
            if (answer.res.status !== 204) {
                ctx.problem('unexpectedAnswers', `${st.path} s${st.seq}: ${answer.res.status} ${answer.body.toString().slice(0, 200)}`);
                ctx.abort = true;
                return;
            }
            const end = Number(answer.res.headers.get('stream-next-offset'));
            st.acked.push({ s: st.seq++, start: end - stored.length, end });
            this.figures.plain_acked++;
            await pause(ctx, this.rand.int(0, 2 * this.paceMs));
        }
    }

    #checkPlain(ctx, st, bytes) {
        const found = new Map();
        let last = -1;
        for (let at = 0; at < bytes.length;) {
            const m = parseMessage(st, bytes, at);
            if (m.error || m.k !== st.k || m.s <= last) {
                ctx.problem('corrupt', `${st.path} at ${at}: ${m.error ?? `message p${m.k} s${m.s} after s${last}`}`, `${st.path} ${at}`);
                return;
            }
            found.set(m.s, { start: at, end: at + m.size });
            last = m.s;
            at += m.size;
        }
        for (const a of st.acked) {
            const m = found.get(a.s);
            if (!m) {
                ctx.problem('losses', `${st.path}: acknowledged plain append s${a.s} [${a.start},${a.end}) is missing`, `${st.path} ${a.s}`);
            } else if (m.start !== a.start || m.end !== a.end) {
                ctx.problem('misplaced', `${st.path}: s${a.s} acknowledged at [${a.start},${a.end}) is at [${m.start},${m.end})`,
                            `${st.path} ${a.s}`);
            }
        }
        const acked = new Set(st.acked.map((a) => a.s));
        for (const s of found.keys()) {
            if (!acked.has(s) && !st.doubt.has(s)) {
                ctx.problem('phantoms', `${st.path}: s${s} was neither acknowledged nor in doubt`, `${st.path} ${s}`);
            }
        }
    }

    // ------------------------------------------------------------ live readers

    async #longPoll(ctx, r) {
        const url = ctx.server.url + r.stream.path;
        while (!ctx.killed) {
            const target = `${url}?offset=${offsetToken(r.seen.length)}&live=long-poll&timeout_ms=${LONG_POLL_MS}`;
            try {
                const { res, body } = await request(target);
                if (res.status === 200) {
                    r.seen = Buffer.concat([r.seen, body]);
                } else if (res.status !== 204) {
                    ctx.problem('unexpectedAnswers', `long-poll ${target}: ${res.status} ${body.toString().slice(0, 200)}`);
                    return;
                }
            } catch {
                r.reconnects++;
                this.figures.live_reconnects++;
                await sleep(100);
            }
        }
    }

    // Follows the stream over SSE, reconnecting where it left off. Data counts
    // only once a control event names the offset after it.
    async #followSse(ctx, r) {
        const url = ctx.server.url + r.stream.path;
        while (!ctx.killed) {
            const controller = new AbortController();
            const stop = setInterval(() => { if (ctx.killed) controller.abort(); }, 100);
            try {
                const res = await fetch(`${url}?offset=${offsetToken(r.seen.length)}&live=sse`, { signal: controller.signal });
                if (res.status !== 200) {
                    ctx.problem('unexpectedAnswers', `SSE ${r.stream.path}: ${res.status} ${await res.text()}`);
                    return;
                }
                await this.#readEvents(ctx, r, res);
            } catch {
                // The server went away or the round ended.
            } finally {
                clearInterval(stop);
            }
            r.reconnects++;
            this.figures.live_reconnects++;
            await sleep(100);
        }
    }

    async #readEvents(ctx, r, res) {
        const decoder = new TextDecoder();
        let buffer = '';
        let event = { name: 'message', data: [] };
        let pending = '';
        for await (const chunk of res.body) {
            buffer += decoder.decode(chunk, { stream: true });
            let lf;
            while ((lf = buffer.indexOf('\n')) >= 0) {
                const line = buffer.slice(0, lf);
                buffer = buffer.slice(lf + 1);
                if (line === '') {
                    if (event.name === 'data') pending += event.data.join('\n');
                    if (event.name === 'control') {
                        const next = Number(JSON.parse(event.data.join('\n')).streamNextOffset);
                        const text = Buffer.from(pending, 'latin1');
                        if (next !== r.seen.length + text.length) {
                            ctx.problem('liveReadMismatches', `SSE ${r.stream.path}: ${text.length} bytes of data, ` +
                                        `but the control event moved ${r.seen.length} -> ${next}`, `sse ${r.stream.path}`);
                        }
                        r.seen = Buffer.concat([r.seen, text]);
                        pending = '';
                    }
                    event = { name: 'message', data: [] };
                } else if (line.startsWith('event:')) {
                    event.name = line.slice(6).trim();
                } else if (line.startsWith('data:')) {
                    event.data.push(line.slice(line.startsWith('data: ') ? 6 : 5));
                }
            }
        }
    }

    // ------------------------------------------------------------ snapshots

    async #snapshots(ctx) {
        while (!ctx.killed) {
            await pause(ctx, this.rand.int(SNAPSHOT_EVERY_MS / 2, SNAPSHOT_EVERY_MS * 2));
            if (ctx.killed) return;
            const st = this.plain[this.rand.int(0, this.plain.length - 1)];
            try {
                await this.#publish(ctx, st);
            } catch {
                // No answer: the publish is in doubt (recorded by #publish).
            }
        }
    }

    async #publish(ctx, st) {
        const url = ctx.server.url + st.path;
        const offset = await tail(url);
        const size = this.rand.next() < 0.25 ? COLD_SNAPSHOT_BYTES : this.rand.int(1, 64 * 1024);
        const attempt = { offset, size, digest: sha256(snapshotBody(st.path, offset, size)) };
        st.snapshotInDoubt = attempt;
        const { res, body } = await request(`${url}/snapshot/${offsetToken(offset)}`, {
            method: 'PUT', headers: { 'Content-Type': 'application/octet-stream' },
            body: snapshotBody(st.path, offset, size),
        });
        st.snapshotInDoubt = null;
        if (res.status === 204) {
            st.snapshot = attempt;
            this.figures.snapshots++;
            if (size === COLD_SNAPSHOT_BYTES) this.figures.cold_snapshots++;
        } else if (res.status !== 409) {  // 409: a snapshot at a later offset is the latest
            ctx.problem('unexpectedAnswers', `publish ${st.path} at ${offset}: ${res.status} ${body.toString().slice(0, 200)}`);
        }
    }

    async #checkSnapshot(ctx, st) {
        // A publish whose answer was lost may have replaced the latest one.
        for (const candidate of [st.snapshotInDoubt, st.snapshot]) {
            if (!candidate) continue;
            const url = `${ctx.server.url}${st.path}/snapshot/${offsetToken(candidate.offset)}`;
            const { res, body } = await request(url);
            if (res.status === 404 && candidate === st.snapshotInDoubt) continue;
            this.figures.snapshot_checks++;
            if (res.status !== 200 || sha256(body) !== candidate.digest) {
                ctx.problem('snapshotMismatches', `${url}: ${res.status}, ${body.length} bytes; published ${candidate.size} bytes`,
                            `${st.path} ${candidate.offset}`);
                return;
            }
            const first = Math.floor(candidate.size / 3);
            const ranged = await request(url, { headers: { Range: `bytes=${first}-${first + 99}` } });
            const want = snapshotBody(st.path, candidate.offset, candidate.size).subarray(first, first + 100);
            if (ranged.res.status !== 206 || !ranged.body.equals(want)) {
                ctx.problem('snapshotMismatches', `${url} bytes=${first}-${first + 99}: ${ranged.res.status}`, `${st.path} range`);
            }
            st.snapshot = candidate;
            st.snapshotInDoubt = null;
            return;
        }
    }

    // ------------------------------------------------------------ forks

    async #forks(ctx) {
        while (!ctx.killed) {
            await pause(ctx, this.rand.int(FORK_EVERY_MS / 2, FORK_EVERY_MS * 2));
            if (ctx.killed) return;
            const source = this.plain[this.rand.int(0, this.plain.length - 1)];
            const fork = { path: `/soak-forks/f${this.forks.length}`, source, offset: 0, own: null,
                           created: 'doubt', appended: 'none' };
            try {
                fork.offset = await tail(ctx.server.url + source.path);
                this.forks.push(fork);
                const created = await request(ctx.server.url + fork.path, {
                    method: 'PUT',
                    headers: { 'Content-Type': TEXT, 'Stream-Forked-From': source.path,
                               'Stream-Fork-Offset': offsetToken(fork.offset) },
                });
                if (created.res.status !== 201) {
                    ctx.problem('unexpectedAnswers', `fork ${fork.path}: ${created.res.status} ${created.body.toString().slice(0, 200)}`);
                    return;
                }
                fork.created = 'yes';
                this.figures.forks++;
                fork.own = Buffer.from(`own bytes of ${fork.path}\n`);
                fork.appended = 'doubt';
                const appended = await request(ctx.server.url + fork.path,
                                               { method: 'POST', headers: { 'Content-Type': TEXT }, body: fork.own });
                if (appended.res.status !== 204) {
                    ctx.problem('unexpectedAnswers', `append to ${fork.path}: ${appended.res.status}`);
                    return;
                }
                fork.appended = 'yes';
            } catch {
                // No answer: the step in doubt stays marked so.
            }
        }
    }

    async #checkFork(ctx, f, sourceBytes) {
        if (!sourceBytes) return;
        const url = ctx.server.url + f.path;
        const { res } = await request(url, { method: 'HEAD' });
        if (res.status === 404 && f.created === 'doubt') return;
        if (res.status !== 200) {
            ctx.problem('forkMismatches', `${f.path}: ${res.status}`, f.path);
            return;
        }
        f.created = 'yes';
        const bytes = await readWhole(url);
        const below = sourceBytes.subarray(0, f.offset);
        const own = bytes.subarray(below.length);
        const ownOk = (f.appended !== 'yes' && own.length === 0) || (f.own && own.equals(f.own) && f.appended !== 'none');
        this.figures.fork_checks++;
        if (!bytes.subarray(0, below.length).equals(below) || !ownOk) {
            ctx.problem('forkMismatches', `${f.path}: ${bytes.length} bytes are not the ${f.offset} bytes of ` +
                        `${f.source.path} and then its own`, f.path);
        }
        if (own.length > 0) f.appended = 'yes';
    }
}
