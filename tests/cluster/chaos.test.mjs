// Chaos (issue #21): for CHAOS_SECONDS, producers append to a stream of each
// group and readers read with consistency=leader, through random nodes,
// while a fault driver, every 1-4 s, picks one of
//   kill9    SIGKILL a node, restart it after 1-5 s
//   sigterm  SIGTERM a node (graceful: exit 0 expected), restart it after 0.2-2 s
//   isolate  cut the leader of a random group off from every other node
//            (nftables), heal after 2-6 s
//   cut      cut one pair of nodes off from each other, heal after 2-6 s
// never impairing more than a minority of the voters at once (one fault at a
// time with 3 replicas, two with 5; one network fault at a time), each fault
// over once its nodes are ready again.
//
// Checked:
// - every consistency=leader read (a catch-up from -1 to the tail) holds
//   every append acknowledged before its first request was sent, each
//   writer's appends in order, none twice, nothing else, and every read of a
//   stream is a prefix of the longest one read (lib/history.mjs checkRead);
// - while a leader is isolated, a probe writer sends writes straight to it
//   (no redirect followed) for a probe stream of each group it led: once the
//   majority has elected another leader (polled on their /__ursula/cluster),
//   the old leader must never answer one 2xx, and none of those is ever in
//   the stream; a probe it acknowledged before is there once;
// - at the end, with everything healed and every node ready, each replica's
//   own copy (readLocal: live reads a follower serves itself) equals the
//   leader's, which holds every acknowledged append once, in order (a write
//   whose outcome stayed unknown at most once) (checkHistory);
// - liveness: every restarted or healed node ready within 30 s, a new leader
//   elected within 15 s of an isolation, and no group without an
//   acknowledged append for more than CHAOS_MAX_UNAVAILABLE_MS.
// It prints one line `chaos: {...}` (faults, appends acknowledged, reads
// checked, max unavailability, ...).
//
//   tests/s3/with_s3rver.sh node --test tests/cluster/chaos.test.mjs   (DSTREAM_BIN set; root for nft)
//   make chaos CHAOS_SECONDS=300
//
// Environment: CHAOS_SECONDS (60), CHAOS_NODES (3), CHAOS_REPLICAS (3, or 5
// with 5 nodes), CHAOS_GROUPS (4), CHAOS_WRITERS_PER_GROUP (2),
// CHAOS_READERS (2), CHAOS_PACE_MS (a writer's pause after an acknowledged
// append, 50), CHAOS_SEED (the fault driver's choices; printed),
// CHAOS_MAX_UNAVAILABLE_MS (20000).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';

import { uniq } from '../http/lib/http.mjs';
import { createStream, metricTotal, nftMissing, readAll, readLocal, sleep, startCluster } from './lib/cluster.mjs';
import { checkHistory, checkRead, newWriter, token } from './lib/history.mjs';

const envInt = (name, dflt) => (process.env[name] ? Number.parseInt(process.env[name], 10) : dflt);
const SECONDS = envInt('CHAOS_SECONDS', 60);
const NODES = envInt('CHAOS_NODES', 3);
const REPLICAS = envInt('CHAOS_REPLICAS', NODES >= 5 ? 5 : 3);
const GROUPS = envInt('CHAOS_GROUPS', 4);
const WRITERS_PER_GROUP = envInt('CHAOS_WRITERS_PER_GROUP', 2);
const READERS = envInt('CHAOS_READERS', 2);
const PACE_MS = envInt('CHAOS_PACE_MS', 50);
const SEED = envInt('CHAOS_SEED', Math.floor(Math.random() * 2 ** 31));
const MAX_UNAVAILABLE_MS = envInt('CHAOS_MAX_UNAVAILABLE_MS', 20_000);
// Faults at once: a minority of a group's voters.
const BUDGET = Math.floor((REPLICAS - 1) / 2);
const ATTEMPT_MS = 3000;
const PAUSE_MS = 30;
const READ_GIVE_UP_MS = 30_000;
const READY_MS = 30_000;
const ELECT_MS = 15_000;
const PROBE_MS = 2000;

// mulberry32: the fault driver's choices repeat with CHAOS_SEED (their
// timing against the servers does not).
function prng(seed) {
    let a = seed >>> 0;
    return () => {
        a = (a + 0x6d2b79f5) >>> 0;
        let t = a;
        t = Math.imul(t ^ (t >>> 15), t | 1);
        t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
        return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
    };
}
const rnd = prng(SEED);
const between = (lo, hi) => lo + Math.floor(rnd() * (hi - lo + 1));
const pickOf = (xs) => xs[Math.floor(rnd() * xs.length)];
// Writers' and readers' node choices: not from the seeded draw, so that the
// fault sequence of a seed does not depend on how many requests ran.
const anyOf = (xs) => xs[Math.floor(Math.random() * xs.length)];

const noNft = nftMissing();

describe(`chaos: ${SECONDS} s of kills, restarts and partitions, ${NODES} nodes`,
         { skip: noNft ?? false, timeout: SECONDS * 1000 + 300_000 }, () => {
    let c;
    let t0 = Date.now();
    const at = () => `t=${((Date.now() - t0) / 1000).toFixed(1)}s`;
    const streams = [];            // {path, group, writers, longest}
    const probeStreams = new Map(); // group -> {path, probes: [{body, sentAt, answer}]}
    const writers = [];
    const electedAt = new Map();   // group -> time the majority was seen to agree on a new leader, this isolation
    const problems = { liveness: [], stale: [], reads: [], unexpected: [] };
    const counts = { kill9: 0, sigterm: 0, isolate: 0, cut: 0, skipped: 0, acked: 0, repeats: 0, writeErrors: 0, writeErrorKinds: {},
                     codes503: {}, reads: 0, readsAbandoned: 0, readRetries: 0, maxReadMs: 0, probes: 0,
                     probesAfterElection: 0, probeAnswers: {}, elections: 0, maxElectMs: 0 };
    const lastAck = new Map();     // group -> time of its last acknowledged append
    let maxGap = { ms: 0 };
    let chaosOver = false;
    let stopping = false;
    let finalAt = Infinity;
    let readersStop = false;
    let running = [];
    let ranChaos = false;
    const finalProblems = [];

    before(async () => {
        // Checkpoints every 64 KiB of log, 64 entries kept before one: a node
        // back from a kill or a cut often finds its leader's log gone and
        // catches up from a snapshot (by way of the bucket).
        c = await startCluster({ nodes: NODES, replicas: REPLICAS, groups: GROUPS,
                                 extraArgs: ['--checkpoint-bytes', '65536', '--raft-trailing-entries', '64'] });
        await c.waitReady(30_000);
        // A writer stream and a probe stream in every group.
        const byGroup = new Map();
        const complete = () => byGroup.size === GROUPS && [...byGroup.values()].every((v) => v.length === 2);
        for (let i = 0; !complete(); i++) {
            assert.ok(i < 500, `two stream names in each of ${GROUPS} groups in 500 tries`);
            const path = `/chaos/${uniq('c')}`;
            const g = await c.groupOf(path);
            if (!byGroup.has(g)) byGroup.set(g, []);
            if (byGroup.get(g).length < 2) byGroup.get(g).push(path);
        }
        for (const [g, [path, probePath]] of [...byGroup.entries()].sort((a, b) => a[0] - b[0])) {
            for (const p of [path, probePath]) {
                const r = await createStream(c, null, p);
                assert.equal(r.res.status, 201, `PUT ${p}: ${r.res.status} ${r.text}`);
            }
            const s = { path, group: g, writers: [], longest: '' };
            for (let k = 0; k < WRITERS_PER_GROUP; k++) {
                const w = newWriter(`${g}x${k}`, path);
                s.writers.push(w);
                writers.push(w);
            }
            streams.push(s);
            probeStreams.set(g, { path: probePath, probes: [] });
        }
        console.log(`chaos: seed ${SEED} (CHAOS_SEED), ${NODES} nodes, ${REPLICAS} replicas, ${GROUPS} groups, ` +
                    `${writers.length} writers, ${READERS} readers, ${SECONDS} s, at most ${BUDGET} fault(s) at once`);
    });

    after(async () => {
        chaosOver = true;
        stopping = true;
        readersStop = true;
        finalAt = Math.min(finalAt, Date.now() + 5000);
        await Promise.allSettled(running);
        await c?.stop();
    });

    function noteAck(group) {
        const now = Date.now();
        counts.acked += 1;
        if (chaosOver) return;
        const last = lastAck.get(group) ?? t0;
        if (now - last > maxGap.ms) {
            maxGap = { ms: now - last, group, from: `t=${((last - t0) / 1000).toFixed(1)}s`,
                       to: `t=${((now - t0) / 1000).toFixed(1)}s` };
        }
        lastAck.set(group, now);
    }

    // ------------------------------------------------------------ writers

    async function writer(w, group) {
        const headers = { 'content-type': 'application/octet-stream', 'producer-id': `chaos-${w.name}`,
                          'producer-epoch': '0' };
        while (true) {
            if (stopping && (w.inDoubt === null || Date.now() > finalAt)) return;
            const seq = w.acked;
            const node = anyOf(c.alive());
            if (!node) { await sleep(PAUSE_MS); continue; }
            if (w.inDoubt === seq) counts.repeats += 1;
            w.inDoubt = seq;
            let res;
            let text;
            try {
                res = await fetch(node.url + w.stream, {
                    method: 'POST', body: token(w.name, seq),
                    headers: { ...headers, 'producer-seq': String(seq) },
                    signal: AbortSignal.timeout(ATTEMPT_MS),
                });
                text = await res.text();
            } catch (e) {
                counts.writeErrors += 1;
                const kind = e.name === 'TimeoutError' ? 'timeout' : (e.cause?.code ?? e.cause?.message ?? e.message);
                counts.writeErrorKinds[kind] = (counts.writeErrorKinds[kind] ?? 0) + 1;
                await sleep(PAUSE_MS);
                continue;
            }
            if (res.status === 200 || res.status === 204) {
                w.acked += 1;
                w.inDoubt = null;
                noteAck(group);
                if (PACE_MS) await sleep(PACE_MS);
                continue;
            }
            if (res.status === 503) {
                const code = /"code":"([A-Z_]+)"/.exec(text)?.[1] ?? '?';
                counts.codes503[code] = (counts.codes503[code] ?? 0) + 1;
                await sleep(PAUSE_MS);
                continue;
            }
            problems.unexpected.push(`${at()} writer ${w.name} seq ${seq} via node ${node.id} -> ${res.url}: ` +
                                     `${res.status} ${text.slice(0, 200)} producer-expected-seq=` +
                                     `${res.headers.get('producer-expected-seq')}`);
            // A refusal applied nothing, and the key cannot go on: this writer stops.
            if (res.status >= 400 && res.status < 500) {
                w.inDoubt = null;
                return;
            }
            await sleep(PAUSE_MS);
        }
    }

    // ------------------------------------------------------------ readers

    // A catch-up read of the whole stream with consistency=leader through
    // random nodes (redirects followed), continued from where an answer left
    // off after a 503 or a connection error: {text, vias}, or null when it
    // could not reach the tail within READ_GIVE_UP_MS.
    async function leaderRead(path, started) {
        const parts = [];
        const vias = [];
        let offset = '-1';
        while (Date.now() - started < READ_GIVE_UP_MS) {
            const node = anyOf(c.alive());
            if (!node) { await sleep(PAUSE_MS); continue; }
            const target = `${node.url}${path}?offset=${encodeURIComponent(offset)}&consistency=leader`;
            let res;
            let body;
            try {
                res = await fetch(target, { signal: AbortSignal.timeout(ATTEMPT_MS) });
                body = Buffer.from(await res.arrayBuffer());
            } catch {
                counts.readRetries += 1;
                await sleep(PAUSE_MS);
                continue;
            }
            if (res.status === 503) {
                counts.readRetries += 1;
                await sleep(PAUSE_MS);
                continue;
            }
            if (res.status !== 200) {
                problems.unexpected.push(`${at()} GET ${target} -> ${res.url}: ${res.status} ${body.toString().slice(0, 200)}`);
                return null;
            }
            vias.push(`${node.id}->${c.nodes.find((n) => res.url.startsWith(n.url))?.id ?? res.url}`);
            parts.push(body);
            offset = res.headers.get('stream-next-offset');
            if (res.headers.get('stream-up-to-date') === 'true') return { text: Buffer.concat(parts).toString('latin1'), vias };
            if (body.length === 0) {
                problems.unexpected.push(`${at()} GET ${target}: an empty 200 that is not up to date`);
                return null;
            }
        }
        return null;
    }

    async function reader() {
        while (!readersStop) {
            const s = anyOf(streams);
            const ackedAtStart = s.writers.map((w) => w.acked);
            const started = Date.now();
            const got = await leaderRead(s.path, started);
            if (got === null) {
                counts.readsAbandoned += 1;
                continue;
            }
            const bound = s.writers.map((w) => w.acked + (w.inDoubt !== null ? 1 : 0));
            counts.reads += 1;
            counts.maxReadMs = Math.max(counts.maxReadMs, Date.now() - started);
            const where = `${at()} read of ${s.path} (group ${s.group}) begun ${Date.now() - started} ms before, ` +
                          `through ${got.vias.join(',')}, ${got.text.length} bytes`;
            for (const p of checkRead(got.text, s.writers, ackedAtStart, bound)) problems.reads.push(`${where}: ${p}`);
            const { text } = got;
            if (text.length >= s.longest.length) {
                if (!text.startsWith(s.longest)) {
                    problems.reads.push(`${where}: not an extension of an earlier read of ${s.longest.length} bytes ` +
                                        `(they part at byte ${firstDiff(text, s.longest)})`);
                }
                s.longest = text;
            } else if (!s.longest.startsWith(text)) {
                problems.reads.push(`${where}: not a prefix of an earlier read of ${s.longest.length} bytes ` +
                                    `(they part at byte ${firstDiff(text, s.longest)})`);
            }
            await sleep(100 + Math.floor(Math.random() * 300));
        }
    }

    // ------------------------------------------------------------ faults

    const touched = new Set();     // node ids down or cut
    let units = 0;                 // faults under way
    let netBusy = false;

    const healthy = () => c.alive().filter((n) => !touched.has(n.id));

    async function backReady(nodes, what) {
        try {
            await c.waitReady(READY_MS, nodes);
        } catch (e) {
            problems.liveness.push(`${at()} after ${what}: ${e.message.split('\n')[0]}\n${await c.describe()}`);
        }
    }

    async function restartFault(signal) {
        const node = pickOf(healthy());
        if (!node) { counts.skipped += 1; return; }
        touched.add(node.id);
        units += 1;
        try {
            const downMs = signal === 'SIGKILL' ? between(1000, 5000) : between(200, 2000);
            console.log(`${at()} ${signal} node ${node.id}, restart after ${downMs} ms`);
            const how = await node.stop(signal);
            counts[signal === 'SIGKILL' ? 'kill9' : 'sigterm'] += 1;
            if (signal === 'SIGTERM' && how.code !== 0) {
                problems.liveness.push(`${at()} SIGTERM of node ${node.id}: exit ${JSON.stringify(how)}, expected code 0\n` +
                                       node.log(3000));
            }
            await sleep(downMs);
            try {
                await node.restart();
            } catch (e) {
                problems.liveness.push(`${at()} restart of node ${node.id}: ${e.message}`);
                return;
            }
            await backReady([node], `the restart of node ${node.id}`);
        } finally {
            touched.delete(node.id);
            units -= 1;
        }
    }

    // Writes straight to the isolated old leader for group g's probe stream,
    // one at a time, until `until()`.
    async function probe(old, g, until) {
        const ps = probeStreams.get(g);
        while (!until()) {
            const body = `p${ps.probes.length}-${old.id};`;
            const rec = { body, sentAt: Date.now(), answer: null };
            ps.probes.push(rec);
            counts.probes += 1;
            try {
                const res = await fetch(old.url + ps.path, {
                    method: 'POST', body, redirect: 'manual',
                    headers: { 'content-type': 'application/octet-stream' }, signal: AbortSignal.timeout(PROBE_MS),
                });
                rec.answer = { status: res.status, location: res.headers.get('location'),
                               body: (await res.text()).slice(0, 200) };
            } catch (e) {
                rec.answer = { error: e.name === 'TimeoutError' ? `no answer within ${PROBE_MS} ms` : e.message };
            }
            rec.answeredAt = Date.now();
            const kind = rec.answer.error ? (rec.answer.error.startsWith('no answer') ? 'timeout' : 'error')
                : `${rec.answer.status}${/"code":"([A-Z_]+)"/.exec(rec.answer.body)?.[1] ? ` ${/"code":"([A-Z_]+)"/.exec(rec.answer.body)[1]}` : ''}`;
            counts.probeAnswers[kind] = (counts.probeAnswers[kind] ?? 0) + 1;
            const elected = electedAt.get(g);
            rec.elected = elected;
            rec.afterElection = elected !== undefined && rec.sentAt >= elected;
            if (rec.afterElection) counts.probesAfterElection += 1;
            if (rec.afterElection && rec.answer.status >= 200 && rec.answer.status < 300) {
                let view;
                try {
                    view = JSON.stringify((await old.status(1000)).groups.find((x) => x.group === g));
                } catch (e) {
                    view = e.message;
                }
                problems.stale.push(`${at()} POST ${old.url}${ps.path} body ${body} (no redirect followed), sent ` +
                                    `${rec.sentAt - elected} ms after the majority agreed on a new leader of group ${g}: ` +
                                    `${JSON.stringify(rec.answer)}; node ${old.id}'s view: ${view}`);
            }
            await sleep(100);
        }
    }

    async function isolateFault() {
        if (netBusy) { counts.skipped += 1; return; }
        // The fault's place is taken before the first await: the driver
        // must not start another one while this one looks for its leader.
        units += 1;
        netBusy = true;
        const skip = () => {
            counts.skipped += 1;
            units -= 1;
            netBusy = false;
        };
        const g = between(0, GROUPS - 1);
        let lead;
        try {
            lead = await c.leaderOf(g, { among: healthy(), timeoutMs: 3000 });
        } catch {
            skip();
            return;
        }
        const old = lead.node;
        if (touched.has(old.id) || !old.alive()) { skip(); return; }
        let led;
        try {
            led = (await old.status(1000)).groups.filter((x) => x.role === 'leader');
        } catch {
            skip();
            return;
        }
        if (touched.has(old.id) || !old.alive()) { skip(); return; }
        if (!led.some((x) => x.group === g)) led.push({ group: g, term: lead.term });
        touched.add(old.id);
        let healed = false;
        try {
            const holdMs = between(2000, 6000);
            const cutAt = Date.now();
            c.isolate(old);
            counts.isolate += 1;
            console.log(`${at()} isolate node ${old.id} (leader of groups ${led.map((x) => x.group).join(',')}), ` +
                        `heal after ${holdMs} ms`);
            for (const x of led) electedAt.delete(x.group);
            const majority = c.alive().filter((n) => n !== old);
            const watchers = led.map(async (x) => {
                try {
                    const next = await c.leaderOf(x.group, { among: majority, differentFrom: old.id, aboveTerm: x.term,
                                                             timeoutMs: ELECT_MS });
                    electedAt.set(x.group, Date.now());
                    counts.elections += 1;
                    counts.maxElectMs = Math.max(counts.maxElectMs, Date.now() - cutAt);
                    console.log(`${at()}   group ${x.group}: node ${next.id} leads at term ${next.term} ` +
                                `(${Date.now() - cutAt} ms after the cut)`);
                } catch (e) {
                    problems.liveness.push(`${at()} isolation of node ${old.id}: ${e.message}\n${await c.describe()}`);
                }
            });
            const probers = led.map((x) => probe(old, x.group, () => healed));
            await Promise.all([sleep(holdMs), ...watchers]);
            // Probes go on for a second after the last election seen.
            await sleep(Math.max(0, cutAt + holdMs - Date.now()) + 1000);
            c.heal();
            healed = true;
            console.log(`${at()} heal`);
            await Promise.all(probers);
            await backReady([old], `the heal of node ${old.id}`);
        } finally {
            if (!healed) { c.heal(); healed = true; }
            touched.delete(old.id);
            units -= 1;
            netBusy = false;
        }
    }

    async function cutFault() {
        const nodes = healthy();
        if (netBusy || nodes.length < 2) { counts.skipped += 1; return; }
        const a = pickOf(nodes);
        const b = pickOf(nodes.filter((n) => n !== a));
        touched.add(a.id);
        touched.add(b.id);
        units += 1;
        netBusy = true;
        try {
            const holdMs = between(2000, 6000);
            c.partition(a, b);
            counts.cut += 1;
            console.log(`${at()} cut ${a.id} <-> ${b.id}, heal after ${holdMs} ms`);
            await sleep(holdMs);
        } finally {
            c.heal();
            console.log(`${at()} heal`);
            await backReady([a, b], `the heal of ${a.id} <-> ${b.id}`);
            touched.delete(a.id);
            touched.delete(b.id);
            units -= 1;
            netBusy = false;
        }
    }

    async function faultDriver(endAt) {
        const active = new Set();
        while (Date.now() < endAt) {
            await sleep(Math.min(between(1000, 4000), Math.max(0, endAt - Date.now())));
            while (units >= BUDGET && Date.now() < endAt) await sleep(100);
            if (Date.now() >= endAt) break;
            const kind = pickOf(['kill9', 'sigterm', 'isolate', 'cut']);
            const run = { kill9: () => restartFault('SIGKILL'), sigterm: () => restartFault('SIGTERM'),
                          isolate: isolateFault, cut: cutFault }[kind];
            const p = run().catch((e) => { problems.liveness.push(`${at()} fault ${kind}: ${e.stack}`); })
                .finally(() => active.delete(p));
            active.add(p);
            // Let a fault take its nodes before the next one is chosen.
            await sleep(50);
        }
        await Promise.all(active);
    }

    // ------------------------------------------------------------ the run

    test(`${SECONDS} s of faults under load; afterwards every node is ready`, { timeout: SECONDS * 1000 + 180_000 }, async () => {
        t0 = Date.now();
        for (const s of streams) lastAck.set(s.group, t0);
        running = [
            ...streams.flatMap((s) => s.writers.map((w) => writer(w, s.group))),
            ...Array.from({ length: READERS }, () => reader()),
        ];
        await faultDriver(t0 + SECONDS * 1000);
        chaosOver = true;
        console.log(`${at()} chaos over: heal, restart every node, wait for ready`);
        c.heal();
        for (const n of c.nodes) if (!n.alive()) await n.restart();
        await c.waitReady(60_000, c.nodes);
        stopping = true;
        finalAt = Date.now() + 30_000;
        // A last round of reads once the writers are done.
        await Promise.all(running.slice(0, writers.length));
        readersStop = true;
        await Promise.all(running);
        ranChaos = true;
        const summary = {
            seed: SEED, seconds: SECONDS, nodes: NODES,
            faults: { kill9: counts.kill9, sigterm: counts.sigterm, isolate: counts.isolate, cut: counts.cut,
                      skipped: counts.skipped },
            appends_acknowledged: counts.acked, reads_checked: counts.reads, reads_abandoned: counts.readsAbandoned,
            max_unavailability_ms: maxGap.ms, max_unavailability: maxGap,
            max_read_ms: counts.maxReadMs, elections_seen: counts.elections, max_elect_ms: counts.maxElectMs,
            probes: counts.probes, probes_after_election: counts.probesAfterElection,
            probe_answers: counts.probeAnswers,
            write_repeats: counts.repeats, write_errors: counts.writeErrorKinds, answers_503: counts.codes503,
            read_retries: counts.readRetries,
            in_doubt_at_end: writers.filter((w) => w.inDoubt !== null).map((w) => w.name),
            // Since each node's last start.
            snapshots_fetched: (await Promise.all(
                c.nodes.map((n) => metricTotal(n, 'dstream_raft_snapshots_fetched_total')))).reduce((a, b) => a + b, 0),
        };
        console.log(`chaos: ${JSON.stringify(summary)}`);
        assert.deepEqual(problems.liveness, [], 'liveness: restarts, heals and elections');
    });

    test('no isolated old leader acknowledged a write after the majority elected another', () => {
        assert.ok(ranChaos, 'the chaos ran');
        assert.deepEqual(problems.stale, []);
    });

    test('no answer other than 2xx, 503 and redirects to a writer or reader', () => {
        assert.ok(ranChaos, 'the chaos ran');
        assert.deepEqual(problems.unexpected, []);
    });

    test('every consistency=leader read held every append acknowledged before it began, in order, once', () => {
        assert.ok(ranChaos, 'the chaos ran');
        assert.ok(counts.reads > 0, 'reads were checked');
        assert.deepEqual(problems.reads.slice(0, 30), []);
    });

    test('every replica holds exactly the acknowledged appends, once each, in order', { timeout: 180_000 }, async () => {
        assert.ok(ranChaos, 'the chaos ran');
        const statuses = await Promise.all(c.nodes.map((n) => n.status()));
        const hosts = (g) => c.nodes.filter((_, i) => statuses[i].groups.some((x) => x.group === g));
        for (const s of streams) {
            const text = (await readAll(c.nodes[0], s.path, { query: 'consistency=leader', ms: 10_000 })).toString('latin1');
            for (const p of checkHistory(text, s.writers)) finalProblems.push(`${s.path} (leader read): ${p}`);
            if (!text.startsWith(s.longest)) {
                finalProblems.push(`${s.path}: the longest read during the chaos (${s.longest.length} bytes) is not a ` +
                                   `prefix of the final stream (${text.length} bytes; they part at byte ${firstDiff(text, s.longest)})`);
            }
            for (const n of hosts(s.group)) await converged(n, s.path, text, `group ${s.group}`);
        }
        for (const [g, ps] of probeStreams) {
            const text = (await readAll(c.nodes[0], ps.path, { query: 'consistency=leader', ms: 10_000 })).toString('latin1');
            const bodies = text.split(';').filter(Boolean).map((b) => `${b};`);
            const times = new Map();
            for (const b of bodies) times.set(b, (times.get(b) ?? 0) + 1);
            const sent = new Map(ps.probes.map((p) => [p.body, p]));
            for (const [b, k] of times) {
                const p = sent.get(b);
                if (!p) finalProblems.push(`${ps.path} (probes of group ${g}): ${JSON.stringify(b)} was never sent`);
                else if (k > 1) finalProblems.push(`${ps.path}: probe ${b} ${k} times`);
                else if (p.afterElection) {
                    finalProblems.push(`${ps.path}: probe ${b}, sent to the isolated old leader ${p.sentAt - p.elected} ms ` +
                                       `after the majority elected another (answer ${JSON.stringify(p.answer)}), is in the stream`);
                }
            }
            for (const p of ps.probes) {
                if (p.answer?.status >= 200 && p.answer?.status < 300 && !times.has(p.body)) {
                    finalProblems.push(`${ps.path}: probe ${p.body} was acknowledged (${JSON.stringify(p.answer)}) and is not in the stream`);
                }
            }
            for (const n of hosts(g)) await converged(n, ps.path, text, `group ${g}, probes`);
        }
        assert.deepEqual(finalProblems.slice(0, 30), []);
        assert.ok(writers.every((w) => w.inDoubt === null),
                  `writes still in doubt at the end: ${JSON.stringify(writers.filter((w) => w.inDoubt !== null))}`);
    });

    test(`no group went more than ${MAX_UNAVAILABLE_MS} ms without an acknowledged append`, () => {
        assert.ok(ranChaos, 'the chaos ran');
        assert.ok(maxGap.ms <= MAX_UNAVAILABLE_MS, `max unavailability ${JSON.stringify(maxGap)}`);
    });

    // Polls node n's own copy of `path` until it equals `want` (30 s).
    async function converged(n, path, want, what) {
        const deadline = Date.now() + 30_000;
        let got = null;
        let lastError = null;
        while (Date.now() < deadline) {
            try {
                got = (await readLocal(n, path)).toString('latin1');
                lastError = null;
                if (got === want) return;
            } catch (e) {
                lastError = e.message;
            }
            await sleep(200);
        }
        finalProblems.push(`${path} (${what}): node ${n.id}'s own copy 30 s after the end: ` +
                           (lastError ? lastError : `${got.length} bytes, the leader's ${want.length}, parting at byte ` +
                                        `${firstDiff(got, want)}: ...${JSON.stringify(got.slice(firstDiff(got, want), firstDiff(got, want) + 60))}`));
    }
});

function firstDiff(a, b) {
    const n = Math.min(a.length, b.length);
    for (let i = 0; i < n; i++) if (a[i] !== b[i]) return i;
    return n;
}
