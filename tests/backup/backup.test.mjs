// Backups and restores through the admin listener, black box against
// build/dstream (docs/operations.md, "Backups and restores"; extensions 2.4
// "History rewrites", 5.3 epoch-closed;by=history):
//
// - a backup under write load, writes after it, a restore: every stream's
//   bytes are the backup's, with a new token, Stream-Previous-Incarnation
//   (the token at backup time) and Stream-Inherited-Offset (the tail in the
//   backup); the old token answers 412; streams created since are gone and
//   deleted ones back; a producer claimed before the backup is closed
//   by=history while a repeat of a surviving write gets its receipt; a
//   repeated restore changes nothing; accepted losses follow 2.4's
//   two-rewrite rules;
// - `backup verify` fails on a flipped byte, a missing file, a truncated manifest;
// - a restore interrupted by SIGKILL and repeated ends in the state of one
//   that ran once (a copy of the same data dir, restored once);
// - the client listener refuses every operator route (404) whatever the
//   request carries, and the admin listener wants its bearer token.
import { test, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';

import { freePort, serverBinary, startServer } from '../http/lib/server.mjs';
import { until } from '../http/lib/within.mjs';

const bin = serverBinary();
const work = mkdtempSync(path.join(os.tmpdir(), 'dstream-backup-'));
const servers = [];
after(async () => {
    for (const s of servers) await s.stop();
    rmSync(work, { recursive: true, force: true });
});

const TEXT = { 'content-type': 'text/plain' };
const INC = 'stream-incarnation';

// A durable node with its admin listener on a free port; 4 groups, and a
// small hot tier so that large streams have cold chunks to back up.
async function startNode({ dataDir, extraArgs = [] } = {}) {
    const adminPort = await freePort();
    const srv = await startServer({
        memory: false,
        dataDir,
        extraArgs: ['--admin-listen', `127.0.0.1:${adminPort}`, '--groups', '4', '--hot-bytes', '4MiB',
                    ...extraArgs],
    });
    srv.admin = `http://127.0.0.1:${adminPort}`;
    servers.push(srv);
    return srv;
}

// Runs a dstream command to its end: {code, stdout, stderr}.
function dstream(...args) {
    const r = spawnSync(bin, args, { encoding: 'utf8', timeout: 120_000, maxBuffer: 64 << 20 });
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

// The same without blocking the event loop (appends go on meanwhile).
function dstreamAsync(...args) {
    return new Promise((resolve) => {
        const child = spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', (d) => { stdout += d; });
        child.stderr.on('data', (d) => { stderr += d; });
        child.on('close', (code) => resolve({ code, stdout, stderr }));
    });
}

function ok(r, what) {
    assert.equal(r.code, 0, `${what}: exit ${r.code}\nstdout: ${r.stdout}\nstderr: ${r.stderr}`);
    return r;
}

async function put(url, body = '', headers = TEXT) {
    const res = await fetch(url, { method: 'PUT', headers, body });
    assert.equal(res.status, 201, `create ${url}: ${await res.text()}`);
    return res.headers.get(INC);
}

async function append(url, body, headers = TEXT) {
    const res = await fetch(url, { method: 'POST', headers, body });
    const text = await res.text();
    return { status: res.status, headers: res.headers, text };
}

// Every byte of a stream, following Stream-Next-Offset (8 MiB an answer).
async function readAll(url, headers = {}) {
    const parts = [];
    let offset = '-1';
    for (;;) {
        const res = await fetch(`${url}?offset=${offset}`, { headers });
        if (res.status !== 200) return { status: res.status, body: null };
        parts.push(Buffer.from(await res.arrayBuffer()));
        const next = res.headers.get('stream-next-offset');
        if (res.headers.get('stream-up-to-date') === 'true' || next === offset) break;
        offset = next;
    }
    return { status: 200, body: Buffer.concat(parts) };
}

async function head(url, headers = {}) {
    const res = await fetch(url, { method: 'HEAD', headers });
    const h = (name) => res.headers.get(name);
    return {
        status: res.status,
        token: h(INC),
        previous: h('stream-previous-incarnation'),
        inherited: h('stream-inherited-offset') === null ? null : Number(h('stream-inherited-offset')),
        tail: h('stream-next-offset') === null ? null : Number(h('stream-next-offset')),
        closed: h('stream-closed'),
    };
}

const producer = (id, epoch, seq) => ({ ...TEXT, 'producer-id': id, 'producer-epoch': String(epoch), 'producer-seq': String(seq) });

// Every group's report of a restore, by stream.
function reportedStreams(restoreJson) {
    const out = new Map();
    for (const g of restoreJson.groups) {
        for (const s of g.streams) out.set(s.stream, { ...s, group: g.group });
    }
    return out;
}

// ---------------------------------------------------------------------------

let backupDir;  // test 1's backup, which test 2 damages copies of
let backedUp;   // what test 1 knows it holds: {path: {token, bytes}}

test('ext 2.4: a backup under write load, writes after it, and a restore that rewinds every stream as one history rewrite', async () => {
    const srv = await startNode();
    const base = `${srv.url}/bk-load`;
    const writers = Array.from({ length: 6 }, (_, i) => `${base}/text-${i}`);
    for (const url of writers) await put(url, 'seed;');
    const big = `${base}/big`;
    await put(big);
    const bigBody = Buffer.alloc(9 << 20, 0).map((_, i) => (i * 7 + 3) & 0xff);
    for (let at = 0; at < bigBody.length; at += 1 << 20) {
        assert.equal((await append(big, bigBody.subarray(at, at + (1 << 20)), { 'content-type': 'text/plain' })).status, 204);
    }
    const gone = `${base}/deleted-after`;
    await put(gone, 'I was there at the backup');
    // Forks (base protocol 4.2) name their source by token: they must read
    // their inherited bytes after the rewrite of the source's history.
    const source = `${base}/fork-source`;
    await put(source, '0123456789');
    const forks = [];
    for (let i = 0; i < 4; i++) {
        const fork = `${base}/fork-${i}`;
        const res = await fetch(fork, {
            method: 'PUT', headers: { ...TEXT, 'stream-forked-from': source.slice(srv.url.length), 'stream-fork-offset': '00000000000000000005' },
        });
        assert.equal(res.status, 201, await res.text());
        assert.equal((await append(fork, `own-${i}`)).status, 204);
        forks.push(fork);
    }
    const prod = `${base}/producer`;
    await put(prod);
    for (let seq = 0; seq <= 3; seq++) {
        assert.equal((await append(prod, `p${seq};`, producer('p1', 0, seq))).status, 200);
    }

    // Appends go on while the backup runs; each stream's acknowledged writes, in order.
    const acked = new Map(writers.map((u) => [u, ['seed;']]));
    const ackedBefore = new Map();
    let writing = true;
    const load = Promise.all(writers.map(async (url, i) => {
        for (let n = 0; writing; n++) {
            const body = `w${i}.${n};`;
            const r = await append(url, body);
            assert.equal(r.status, 204, r.text);
            acked.get(url).push(body);
        }
    }));
    await new Promise((r) => setTimeout(r, 200));
    for (const url of writers) ackedBefore.set(url, acked.get(url).join('').length);
    backupDir = path.join(work, 'backup-1');
    const created = ok(await dstreamAsync('backup', 'create', srv.admin, '--to', backupDir), 'backup create');
    const ackedDuring = writers.reduce((n, u) => n + acked.get(u).join('').length - ackedBefore.get(u), 0);
    writing = false;
    await load;
    assert.ok(ackedDuring > 0, 'writes were acknowledged while the backup ran');
    const backupId = created.stdout.trim();
    assert.match(backupId, /^[0-9a-f]{32}$/, `backup create prints the backup id: ${created.stdout}`);
    const manifest = readFileSync(path.join(backupDir, 'manifest'), 'utf8');
    assert.match(manifest, new RegExp(`^id ${backupId}$`, 'm'));
    assert.ok(readdirSync(path.join(backupDir, 'objects')).length > 0, 'the cold chunks are in the backup');

    const before = new Map();
    for (const url of [...writers, big, gone, prod]) before.set(url, await head(url));

    // Writes after the backup: all of them are rewound.
    for (const url of writers) assert.equal((await append(url, 'after;')).status, 204);
    assert.equal((await append(big, 'after')).status, 204);
    assert.equal((await append(source, 'after')).status, 204);
    assert.equal((await append(forks[0], 'after')).status, 204);
    const p4 = await append(prod, 'p4;', producer('p1', 0, 4));
    assert.equal(p4.status, 200, p4.text);
    assert.equal((await fetch(gone, { method: 'DELETE' })).status, 204);
    const later = `${base}/created-after`;
    await put(later, 'new');

    ok(dstream('backup', 'verify', backupDir), 'backup verify');
    const restored = ok(dstream('restore', srv.admin, '--from', backupDir, '--json'), 'restore');
    const report = JSON.parse(restored.stdout);
    assert.equal(report.backup_id, backupId);
    assert.equal(report.groups.length, 4);
    const streams = reportedStreams(report);

    // Every stream's bytes are the backup's: for the streams under load, a
    // prefix of the acknowledged writes ending at a write's end, at least
    // what was acknowledged before the backup began.
    for (const url of writers) {
        const h = await head(url);
        const all = acked.get(url).join('');
        const { body } = await readAll(url);
        const text = body.toString();
        assert.ok(all.startsWith(text), `${url}: the restored bytes are not a prefix of the acknowledged writes`);
        assert.ok(text.length >= ackedBefore.get(url), `${url}: the restore lost writes acknowledged before the backup`);
        assert.ok(text.endsWith(';'), `${url}: the restored bytes end inside a write`);
        assert.equal(h.tail, text.length);
        assert.notEqual(h.token, before.get(url).token, `${url}: the token did not change`);
        assert.equal(h.previous, before.get(url).token, `${url}: Stream-Previous-Incarnation is not the token at backup time`);
        assert.equal(h.inherited, text.length, `${url}: Stream-Inherited-Offset is not the tail in the backup`);
        const reported = streams.get(url.slice(srv.url.length + 1));
        assert.equal(reported.incarnation, h.token);
        assert.equal(reported.tail, text.length);
    }
    backedUp = new Map();
    for (const url of [...writers, big, gone, prod, source, ...forks]) {
        backedUp.set(url.slice(srv.url.length), { token: before.get(url)?.token, bytes: (await readAll(url)).body });
    }
    const bigNow = await readAll(big);
    assert.ok(bigNow.body.equals(bigBody), 'the large stream (cold chunks and hot tail) is the backup\'s');
    assert.equal((await head(big)).inherited, bigBody.length);
    assert.equal((await readAll(gone)).body.toString(), 'I was there at the backup', 'a stream deleted after the backup is back');
    assert.equal((await head(later)).status, 404, 'a stream created after the backup is gone');
    for (const [i, fork] of forks.entries()) {
        assert.equal((await readAll(fork)).body?.toString(), `01234own-${i}`, `${fork}: a fork reads through its rewritten source`);
    }
    assert.equal((await readAll(source)).body.toString(), '0123456789');
    assert.equal(streams.get(later.slice(srv.url.length + 1)).incarnation, null);

    // The old token is refused (412) with the new one.
    const stale = await fetch(`${writers[0]}?offset=-1`, { headers: { [INC]: before.get(writers[0]).token } });
    assert.equal(stale.status, 412);
    assert.equal(stale.headers.get(INC), (await head(writers[0])).token);

    // extensions 5.3: the producer claimed before the backup is closed by
    // history at the seq that survived; a repeat of a surviving write gets
    // its receipt; a new epoch starts.
    assert.equal((await readAll(prod)).body.toString(), 'p0;p1;p2;p3;');
    const lost = await append(prod, 'p4;', producer('p1', 0, 4));
    assert.equal(lost.status, 403, lost.text);
    assert.equal(lost.headers.get('producer-outcome'), 'epoch-closed;by=history');
    assert.equal(lost.headers.get('producer-closed-epoch'), '0');
    assert.equal(lost.headers.get('producer-closed-seq'), '3');
    assert.equal(lost.headers.get('producer-epoch'), '0');
    assert.equal(JSON.parse(lost.text).error.code, 'PRODUCER_EPOCH_CLOSED');
    const repeat = await append(prod, 'p3;', producer('p1', 0, 3));
    assert.equal(repeat.status, 204, repeat.text);
    assert.equal(repeat.headers.get('stream-offset'), '00000000000000000009');
    assert.equal(repeat.headers.get('stream-next-offset'), '00000000000000000012');
    const claim = await append(prod, 'q0;', producer('p1', 1, 0));
    assert.equal(claim.status, 200, claim.text);

    // A repeated restore changes nothing: every group holds this backup's history.
    const tokens = new Map();
    for (const url of writers) tokens.set(url, await head(url));
    const again = JSON.parse(ok(dstream('restore', srv.admin, '--from', backupDir, '--json'), 'restore again').stdout);
    assert.ok(again.groups.every((g) => g.already_restored), 'a repeat restores nothing');
    for (const url of writers) assert.deepEqual(await head(url), tokens.get(url));
    assert.equal((await readAll(prod)).body.toString(), 'p0;p1;p2;p3;q0;', 'writes after the restore stay');

    // extensions 2.4, two rewrites. An accepted loss right after the restore
    // (no write between them): the headers name the token before both.
    const url = writers[0];
    const group = String(streams.get(url.slice(srv.url.length + 1)).group);
    const tail = (await head(url)).tail;
    const loss = JSON.parse(ok(dstream('accept-loss', srv.admin, '--group', group, '--json'), 'accept-loss').stdout);
    const row = loss.streams.find((s) => s.stream === url.slice(srv.url.length + 1));
    assert.equal(row.before, tokens.get(url).token, 'accept-loss reports the token before the loss');
    assert.equal(row.tail, tail, 'accept-loss reports the tail kept');
    let h = await head(url);
    assert.notEqual(h.token, tokens.get(url).token);
    assert.equal(h.previous, before.get(url).token, 'no write between two rewrites: the token before both');
    assert.equal(h.inherited, tail);
    // A write, then another: the token between them; the backup-time token finds no match.
    assert.equal((await append(url, 'between;')).status, 204);
    const between = h.token;
    ok(dstream('accept-loss', srv.admin, '--group', group), 'accept-loss again');
    h = await head(url);
    assert.equal(h.previous, between, 'a write between two rewrites: the token between them');
    assert.equal(h.inherited, tail + 'between;'.length);
    assert.notEqual(h.previous, before.get(url).token, 'a client holding the old history\'s token finds no match');
});

test('backup verify: whole, and not whole after a flipped byte, a missing file or a truncated manifest', () => {
    assert.ok(backupDir, 'the first test made a backup');
    const copy = (name) => {
        const dir = path.join(work, name);
        cpSync(backupDir, dir, { recursive: true });
        return dir;
    };
    const filesUnder = (dir) => readdirSync(dir, { recursive: true })
        .map((f) => path.join(dir, f)).filter((f) => statSync(f).isFile() && f.includes(`${path.sep}objects${path.sep}`));

    ok(dstream('backup', 'verify', copy('whole')), 'a whole copy');

    const flipped = copy('flipped');
    const victim = filesUnder(flipped).sort()[0];
    const bytes = readFileSync(victim);
    bytes[bytes.length >> 1] ^= 0x01;
    writeFileSync(victim, bytes);
    let r = dstream('backup', 'verify', flipped);
    assert.equal(r.code, 1, `a flipped byte: ${r.stdout} ${r.stderr}`);
    assert.match(r.stderr, /does not match its digest/);

    const missing = copy('missing');
    rmSync(filesUnder(missing).sort()[0]);
    r = dstream('backup', 'verify', missing);
    assert.equal(r.code, 1, `a missing file: ${r.stdout} ${r.stderr}`);
    assert.match(r.stderr, /is missing/);

    const truncated = copy('truncated');
    const manifest = path.join(truncated, 'manifest');
    truncateSync(manifest, statSync(manifest).size - 20);
    r = dstream('backup', 'verify', truncated, '--json');
    assert.equal(r.code, 1, `a truncated manifest: ${r.stdout} ${r.stderr}`);
    assert.equal(JSON.parse(r.stdout).whole, false);

    const image = copy('image');
    const g0 = path.join(image, 'groups', 'g0.ckpt');
    const imageBytes = readFileSync(g0);
    imageBytes[10] ^= 0x80;
    writeFileSync(g0, imageBytes);
    assert.equal(dstream('backup', 'verify', image).code, 1, 'a damaged group image');
    assert.equal(dstream('backup', 'verify', path.join(work, 'no-such-backup')).code, 1, 'no backup');
});

test('a backup restores into a fresh node: every object copied, every stream the backup\'s; a damaged one changes nothing', async () => {
    assert.ok(backedUp, 'the first test made a backup');
    const fresh = await startNode();
    // A damaged backup (test 2's copy with a flipped byte) is refused before
    // any group is rewound: nothing of it appears.
    const damaged = dstream('restore', fresh.admin, '--from', path.join(work, 'flipped'));
    assert.equal(damaged.code, 1, `a damaged backup: ${damaged.stdout} ${damaged.stderr}`);
    assert.match(damaged.stderr, /nothing was restored: .*does not match its digest/);
    for (const p of backedUp.keys()) assert.equal((await head(fresh.url + p)).status, 404, `${p} after a refused restore`);

    const report = JSON.parse(ok(dstream('restore', fresh.admin, '--from', backupDir, '--json'), 'restore').stdout);
    assert.ok(report.groups.reduce((n, g) => n + g.objects_copied, 0) > 0, 'the cold objects were copied');
    for (const [p, expected] of backedUp) {
        const url = fresh.url + p;
        assert.deepEqual((await readAll(url)).body, expected.bytes, `${p}: bytes`);
        if (expected.token) assert.equal((await head(url)).previous, expected.token, `${p}: Stream-Previous-Incarnation`);
    }
    // It takes writes after the restored tails.
    const [first] = backedUp.keys();
    assert.equal((await append(fresh.url + first, 'next;')).status, 204);
});

test('ext 2.4: a restore interrupted by SIGKILL and repeated ends in the state of one that ran once', async () => {
    let a = await startNode({ dataDir: path.join(work, 'data-kill-source') });
    const base = `${a.url}/bk-kill`;
    const urls = Array.from({ length: 12 }, (_, i) => `${base}/s-${i}`);
    for (const [i, url] of urls.entries()) {
        await put(url, `seed-${i};`);
        assert.equal((await append(url, `p0;`, producer('p', 0, 0))).status, 200);
    }
    const dir = path.join(work, 'backup-kill');
    ok(dstream('backup', 'create', a.admin, '--to', dir), 'backup create');
    for (const url of urls) assert.equal((await append(url, 'after;')).status, 204);
    await fetch(urls[0], { method: 'DELETE' });
    await put(`${base}/new`, 'new');

    // A copy of the node as it is now, which restores once.
    await a.stop();
    const dataB = path.join(work, 'data-once');
    cpSync(a.dataDir, dataB, { recursive: true });
    const dataA = path.join(work, 'data-killed');
    cpSync(a.dataDir, dataA, { recursive: true });
    const once = await startNode({ dataDir: dataB });
    ok(dstream('restore', once.admin, '--from', dir), 'restore once');

    // The other: group 0 restored, group 1's restore proposed as the node is
    // killed, then the whole restore again.
    a = await startNode({ dataDir: dataA });
    const call = (g) => fetch(`${a.admin}/__ursula/restore/groups/${g}`, {
        method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ location: dir }),
    });
    assert.equal((await call(0)).status, 200);
    const inFlight = call(1).catch(() => null);
    await new Promise((r) => setTimeout(r, 2));
    a.signal('SIGKILL');
    await inFlight;
    await a.waitExit();
    const admin = a.admin;
    a = await a.restart();
    a.admin = admin;
    servers.push(a);
    ok(dstream('restore', a.admin, '--from', dir), 'restore after the kill');

    for (const url of [...urls, `${base}/new`]) {
        const path_ = url.slice(a.url.length);
        const killed = `${a.url}${path_}`;
        const clean = `${once.url}${path_}`;
        assert.deepEqual(await head(killed), await head(clean), `${path_}: HEAD differs`);
        assert.deepEqual(await readAll(killed), await readAll(clean), `${path_}: bytes differ`);
    }
    const h = await head(`${a.url}/bk-kill/s-3`);
    assert.ok(h.previous !== null && h.token !== h.previous);
    const lost = await append(`${a.url}/bk-kill/s-3`, 'p1;', producer('p', 0, 1));
    assert.equal(lost.headers.get('producer-outcome'), 'epoch-closed;by=history');
});

test('the client listener refuses every operator route (404) whatever the request carries; the admin listener wants its token', async () => {
    const tokenFile = path.join(work, 'admin-token');
    const token = 'admin-0123456789-secret';
    writeFileSync(tokenFile, `${token}\n`);
    const srv = await startNode({ extraArgs: ['--admin-token-file', tokenFile] });
    const stream = `${srv.url}/bk-auth/s`;
    const tokenBefore = await put(stream, 'x');
    const routes = [
        ['GET', '/__ursula/admin/node'],
        ['POST', '/__ursula/backup/begin'],
        ['POST', '/__ursula/backup/groups/0'],
        ['POST', '/__ursula/backup/manifest'],
        ['POST', '/__ursula/restore/groups/0'],
        ['POST', '/__ursula/accept-loss/groups/0'],
        ['POST', '/__ursula/accept-loss/groups/1'],
        ['POST', '/__ursula/accept-loss/groups/2'],
        ['POST', '/__ursula/accept-loss/groups/3'],
    ];
    const body = JSON.stringify({ location: path.join(work, 'never'), backup_id: '0'.repeat(32) });
    for (const [method, route] of routes) {
        for (const headers of [{}, { authorization: `Bearer ${token}` }, { authorization: `Bearer ${token}`, 'x-forwarded-for': '127.0.0.1' }]) {
            for (const m of [method, 'PUT', 'DELETE']) {
                const res = await fetch(`${srv.url}${route}`, {
                    method: m, headers: { ...headers, 'content-type': 'application/json' }, body: m === 'GET' ? undefined : body,
                });
                assert.equal(res.status, 404, `${m} ${route} on the client listener`);
                assert.equal((await res.json()).error.code, 'NOT_FOUND');
            }
        }
    }
    assert.equal((await head(stream)).token, tokenBefore, 'nothing changed');

    // The admin listener: 401 without the token or with a wrong one.
    for (const authorization of [undefined, 'Bearer wrong', `Basic ${token}`, `Bearer ${token}x`, 'Bearer ']) {
        const res = await fetch(`${srv.admin}/__ursula/admin/node`, { headers: authorization ? { authorization } : {} });
        assert.equal(res.status, 401, `authorization ${authorization}`);
        assert.equal((await res.json()).error.code, 'INVALID_CREDENTIAL');
        const loss = await fetch(`${srv.admin}/__ursula/accept-loss/groups/0`, { method: 'POST', headers: authorization ? { authorization } : {} });
        assert.equal(loss.status, 401);
    }
    assert.equal((await head(stream)).token, tokenBefore, 'nothing changed');
    const res = await fetch(`${srv.admin}/__ursula/admin/node`, { headers: { authorization: `Bearer ${token}` } });
    assert.equal(res.status, 200);
    assert.equal((await res.json()).group_count, 4);

    // The commands send the token from --admin-token-file, and fail without it.
    const dir = path.join(work, 'backup-auth');
    const refused = dstream('backup', 'create', srv.admin, '--to', dir);
    assert.equal(refused.code, 1);
    assert.match(refused.stderr, /INVALID_CREDENTIAL/);
    ok(dstream('backup', 'create', srv.admin, '--to', dir, '--admin-token-file', tokenFile), 'backup with the token');
    ok(dstream('backup', 'verify', dir), 'verify');
    // A second backup into the same location is refused: one backup per location.
    const twice = dstream('backup', 'create', srv.admin, '--to', dir, '--admin-token-file', tokenFile);
    assert.equal(twice.code, 1);
    assert.match(twice.stderr, /holds a backup already/);
});
