// Issue "Durable by default": memory is bounded by configuration (hot bytes,
// chunk cache), not by the data held. Writes a stream set several times larger
// than the hot-bytes limit, reads it all back, and checks the server's peak RSS.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { startServer } from '../http/lib/server.mjs';

const MiB = 1024 * 1024;
const STREAMS = 48;
const PER_STREAM = 4 * MiB + 123 * 1024;  // not on the chunk grid
const PIECE = 256 * 1024;
const HOT = 16 * MiB;
const CACHE = 8 * MiB;
// Hot bytes + chunk cache + request buffers + the process itself; the data
// written (about 200 MiB) is far above it.
const RSS_LIMIT = 128 * MiB;
// ASan's quarantine dominates RSS in a sanitizer build (see CMakeLists.txt).
const sanitized = process.env.DSTREAM_SANITIZED === '1';

function peakRss(pid) {
    const status = readFileSync(`/proc/${pid}/status`, 'utf8');
    return Number(/VmHWM:\s+(\d+) kB/.exec(status)[1]) * 1024;
}

function pieceFor(stream, index) {
    // Deterministic, incompressible-looking bytes per (stream, piece).
    const out = Buffer.alloc(PIECE);
    let seed = createHash('sha256').update(`${stream}:${index}`).digest();
    for (let at = 0; at < PIECE; at += seed.length) {
        seed.copy(out, at);
        seed = createHash('sha256').update(seed).digest();
    }
    return out;
}

async function readAllDigest(url) {
    const hash = createHash('sha256');
    let offset = '-1';
    let total = 0;
    for (let i = 0; i < 10000; i++) {
        const res = await fetch(`${url}?offset=${offset}`);
        assert.equal(res.status, 200);
        const body = Buffer.from(await res.arrayBuffer());
        hash.update(body);
        total += body.length;
        offset = res.headers.get('stream-next-offset');
        if (res.headers.get('stream-up-to-date') === 'true') break;
    }
    return { digest: hash.digest('hex'), total };
}

test('durable: peak RSS stays bounded while the data held is many times the hot-bytes limit', async () => {
    let srv = await startServer({
        memory: false,
        extraArgs: ['--hot-bytes', String(HOT), '--chunk-cache-bytes', String(CACHE)],
    });
    try {
        const expected = [];
        for (let s = 0; s < STREAMS; s++) {
            const url = `${srv.url}/bounded-mem/s${s}`;
            const res = await fetch(url, { method: 'PUT', headers: { 'Content-Type': 'application/octet-stream' } });
            assert.equal(res.status, 201);
            expected.push(createHash('sha256'));
        }
        // Round-robin over streams so every stream grows at once.
        for (let written = 0; written < PER_STREAM; written += PIECE) {
            const n = Math.min(PIECE, PER_STREAM - written);
            await Promise.all(Array.from({ length: STREAMS }, async (_, s) => {
                const body = pieceFor(s, written / PIECE).subarray(0, n);
                expected[s].update(body);
                const res = await fetch(`${srv.url}/bounded-mem/s${s}`, {
                    method: 'POST', headers: { 'Content-Type': 'application/octet-stream' }, body,
                });
                assert.equal(res.status, 204, await res.text());
            }));
        }
        const digests = expected.map((h) => h.digest('hex'));
        const verify = async () => {
            for (let s = 0; s < STREAMS; s++) {
                const got = await readAllDigest(`${srv.url}/bounded-mem/s${s}`);
                assert.equal(got.total, PER_STREAM, `stream ${s} length`);
                assert.equal(got.digest, digests[s], `stream ${s} bytes`);
            }
        };
        await verify();
        const written = STREAMS * PER_STREAM;
        const peak = peakRss(srv.pid);
        console.log(`bounded_memory: wrote ${(written / MiB).toFixed(0)} MiB with --hot-bytes ${HOT / MiB} MiB; peak RSS ${(peak / MiB).toFixed(1)} MiB`);
        assert.ok(written > 8 * HOT, 'the data must be far above the hot limit');
        if (!sanitized) assert.ok(peak < RSS_LIMIT, `peak RSS ${(peak / MiB).toFixed(1)} MiB is above ${RSS_LIMIT / MiB} MiB`);

        // After a crash, recovery keeps the same bound and the same bytes.
        srv = await srv.crashAndRestart();
        await verify();
        const peakAfter = peakRss(srv.pid);
        console.log(`bounded_memory: after restart, peak RSS ${(peakAfter / MiB).toFixed(1)} MiB`);
        if (!sanitized) assert.ok(peakAfter < RSS_LIMIT, `peak RSS after restart ${(peakAfter / MiB).toFixed(1)} MiB`);
    } finally {
        await srv.stop();
    }
});
