#!/usr/bin/env node
// Restart benchmark (issue "Durable by default"): fills a durable dstream with
// at least 1 GiB of stream data, kills it with SIGKILL, restarts it on the same
// data dir, and reports the time until it answers again and the restarted
// process's peak RSS; then checks every stream's length and a sample of bytes.
//
//   node bench/restart/restart_bench.mjs [--bin build/dstream] [--gib 1] [--streams 256]
//                                        [--hot-bytes 268435456] [--data-dir DIR]
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';

const { values: opt } = parseArgs({
    options: {
        bin: { type: 'string', default: 'build/dstream' },
        gib: { type: 'string', default: '1' },
        streams: { type: 'string', default: '256' },
        'hot-bytes': { type: 'string', default: String(256 * 1024 * 1024) },
        'data-dir': { type: 'string' },
    },
});
const MiB = 1024 * 1024;
const total = Math.round(Number(opt.gib) * 1024 * MiB);
const streams = Number(opt.streams);
const piece = MiB;
const perStream = Math.ceil(total / streams / piece) * piece;
const dataDir = opt['data-dir'] ?? mkdtempSync(path.join(os.tmpdir(), 'dstream-restart-'));
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const port = await new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => { const p = s.address().port; s.close(() => resolve(p)); });
});
const url = `http://127.0.0.1:${port}`;

function start() {
    const child = spawn(opt.bin, ['serve', '--listen', `127.0.0.1:${port}`, '--admin-listen', 'off', '--data-dir', dataDir,
                                  '--hot-bytes', opt['hot-bytes'], '--log-level', 'info'],
                        { stdio: ['ignore', 'ignore', 'pipe'] });
    let log = '';
    child.stderr.on('data', (d) => { log += d; });
    child.log = () => log;
    return child;
}
async function waitUp(child, limitMs) {
    const t0 = process.hrtime.bigint();
    while (true) {
        if (child.exitCode !== null) throw new Error(`server exited: ${child.log()}`);
        try {
            const r = await fetch(`${url}/`, { signal: AbortSignal.timeout(500) });
            await r.arrayBuffer();
            return Number(process.hrtime.bigint() - t0) / 1e6;
        } catch { /* not yet */ }
        if (Number(process.hrtime.bigint() - t0) / 1e6 > limitMs) throw new Error('server did not come up');
        await sleep(5);
    }
}
const peakRss = (pid) => Number(/VmHWM:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]) * 1024;
const body = (s, i) => { const b = Buffer.alloc(piece, (s * 31 + i) & 0xff); b.writeUInt32BE(s, 0); b.writeUInt32BE(i, 4); return b; };

let server = start();
try {
    await waitUp(server, 10000);
    console.log(`filling ${streams} streams with ${(perStream * streams / MiB / 1024).toFixed(2)} GiB ...`);
    const t0 = Date.now();
    for (let s = 0; s < streams; s++) {
        await fetch(`${url}/restart-bench/s${s}`, { method: 'PUT', headers: { 'Content-Type': 'application/octet-stream' } });
    }
    for (let i = 0; i < perStream / piece; i++) {
        await Promise.all(Array.from({ length: streams }, async (_, s) => {
            const r = await fetch(`${url}/restart-bench/s${s}`, {
                method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body: body(s, i) });
            if (r.status !== 204) throw new Error(`append ${s}/${i}: ${r.status} ${await r.text()}`);
        }));
    }
    const fillSec = (Date.now() - t0) / 1000;
    const writePeak = peakRss(server.pid);
    server.kill('SIGKILL');
    await new Promise((r) => server.once('exit', r));

    server = start();
    const restartMs = await waitUp(server, 600000);
    const restartPeak = peakRss(server.pid);
    // Check every stream's length and the first bytes of two pieces.
    for (let s = 0; s < streams; s++) {
        const head = await fetch(`${url}/restart-bench/s${s}`, { method: 'HEAD' });
        if (Number(head.headers.get('stream-next-offset')) !== perStream) throw new Error(`stream ${s} length`);
        for (const i of [0, perStream / piece - 1]) {
            const off = String(i * piece).padStart(20, '0');
            const r = await fetch(`${url}/restart-bench/s${s}?offset=${off}&max_bytes=8`);
            const got = Buffer.from(await r.arrayBuffer());
            if (!got.equals(body(s, i).subarray(0, 8))) throw new Error(`stream ${s} piece ${i} bytes differ`);
        }
    }
    const recovered = /recovered .*/.exec(server.log())?.[0] ?? '';
    const result = {
        bench: 'restart', data_gib: +(perStream * streams / 1024 / MiB).toFixed(3), streams,
        hot_bytes: Number(opt['hot-bytes']), fill_seconds: fillSec, peak_rss_mib_while_writing: +(writePeak / MiB).toFixed(1),
        restart_ms: +restartMs.toFixed(0), peak_rss_mib_after_restart: +(restartPeak / MiB).toFixed(1), verified_streams: streams,
    };
    console.log(JSON.stringify(result));
    console.log(`restart after SIGKILL with ${result.data_gib} GiB: answered in ${result.restart_ms} ms, peak RSS ${result.peak_rss_mib_after_restart} MiB (${recovered})`);
} finally {
    server.kill('SIGKILL');
    if (!opt['data-dir']) rmSync(dataDir, { recursive: true, force: true });
}
