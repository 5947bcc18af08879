// README.md's command blocks, run as written, in order, against a fresh
// durable node: what a new user pastes must work. The blocks name the
// default address (127.0.0.1:4437) and build/dstream; the test's server
// listens on a free port and the blocks get its address, and the binary
// under test when it is not build/dstream (a sanitizer build). The first
// block (`make run`, `make test`) is the harness this test runs in.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import https from 'node:https';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { freePort, startServer } from '../http/lib/server.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const README = readFileSync(path.join(ROOT, 'README.md'), 'utf8');
const BLOCKS = [...README.matchAll(/^```sh\n([\s\S]*?)^```$/gm)].map((m) => m[1]);

let srv;
before(async () => { srv = await startServer({ memory: false }); });
after(async () => { await srv?.stop(); });

// Runs one block with bash -e -o pipefail from the repository's root.
function run(block, seconds) {
    let script = block.replaceAll('127.0.0.1:4437', `127.0.0.1:${srv.port}`);
    const bin = process.env.DSTREAM_BIN;
    if (bin && path.resolve(bin) !== path.join(ROOT, 'build/dstream')) {
        script = script.replaceAll('B=build/dstream', `B=${bin}`);
    }
    return new Promise((resolve) => {
        const child = spawn('bash', ['-e', '-o', 'pipefail', '-c', script], { cwd: ROOT });
        let out = '';
        let err = '';
        child.stdout.on('data', (d) => { out += d; });
        child.stderr.on('data', (d) => { err += d; });
        const timer = setTimeout(() => child.kill('SIGKILL'), seconds * 1000);
        child.on('close', (code, signal) => {
            clearTimeout(timer);
            // Terminal colours (vitest's) are not part of what is checked.
            const plain = (text) => text.replace(/\x1b\[[0-9;]*m/g, '');
            resolve({ code, signal, out: plain(out), err: plain(err) });
        });
    });
}

function ran(r, what) {
    assert.equal(r.signal, null, `${what}: killed after its time limit\nstdout: ${r.out}\nstderr: ${r.err}`);
    assert.equal(r.code, 0, `${what}: exit ${r.code}\nstdout: ${r.out}\nstderr: ${r.err}`);
}

test('README: the blocks are the ones this test knows how to check', () => {
    assert.equal(BLOCKS.length, 5, 'a new ```sh block in README.md needs its checks in tests/readme');
    assert.match(BLOCKS[0], /^make run\b/m);
    assert.match(BLOCKS[0], /^make test\b/m);
});

test('README: the dstream client block', async () => {
    const r = await run(BLOCKS[1], 60);
    ran(r, 'client block');
    assert.match(r.out, /^hello world$/m, 'read prints hello world');
    assert.match(r.out, /"status": ?200/, 'head --json prints the status');
    // The tail printed both messages, one a line, and ended with the close.
    assert.match(r.out, /^\{"role":"user","text":"hi"\}$/m);
    assert.match(r.out, /^\{"role":"bot","text":"hello"\}$/m);
});

test('README: the curl block', async () => {
    const r = await run(BLOCKS[2], 60);
    ran(r, 'curl block');
    assert.match(r.out, /^HTTP\/1\.1 201 /m, 'the create');
    assert.match(r.out, /^HTTP\/1\.1 204 /m, 'the append');
    assert.match(r.out, /^hello world$/m, 'the read prints hello world, once');
    assert.doesNotMatch(r.out, /worldworld/);
    assert.match(r.out, /^201$/m, 'the JSON stream is created');
    assert.match(r.out, /^data: ?\[?\{"text":"hi"\}/m, 'the live tail printed the message');
    assert.match(r.out, /"streamClosed":true/, 'and ended with the close');
    // The long-poll at the tail ends at its timeout.
    assert.match(r.out, /HTTP\/1\.1 204 [^\n]*\r?\n(?:[^\n]*\n)*?Stream-Next-Offset: 00000000000000000011/i);
});

test('README: the two-line TLS start', async () => {
    // The block as written, with a directory and a port of its own.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'dstream-readme-tls-'));
    const port = await freePort();
    let script = BLOCKS[3].replaceAll('/tmp/dstream-certs', dir).replaceAll('127.0.0.1:4443', `127.0.0.1:${port}`);
    const bin = process.env.DSTREAM_BIN;
    if (bin && path.resolve(bin) !== path.join(ROOT, 'build/dstream')) {
        script = script.replaceAll('build/dstream', bin);
    }
    const child = spawn('bash', ['-e', '-c', `${script.trim()}`], { cwd: ROOT, detached: true, stdio: 'ignore' });
    try {
        const deadline = Date.now() + 20_000;
        let status = 0;
        while (status !== 200) {
            assert.ok(Date.now() < deadline, 'the node answers over HTTPS within 20 s');
            status = await new Promise((resolve) => {
                let ca;
                try { ca = readFileSync(path.join(dir, 'ca.pem')); } catch { resolve(0); return; }
                const req = https.get(`https://127.0.0.1:${port}/__ursula/health`, { ca, agent: false }, (res) => {
                    res.resume();
                    resolve(res.statusCode);
                });
                req.on('error', () => resolve(0));
            });
            if (status !== 200) await new Promise((r) => setTimeout(r, 100));
        }
    } finally {
        process.kill(-child.pid, 'SIGTERM');
        rmSync(dir, { recursive: true, force: true });
    }
});

test('README: the conformance block against the running node', async () => {
    const r = await run(BLOCKS[4], 400);
    ran(r, 'conformance block');
    assert.match(r.out, /Tests\s+\d+ passed/);
    assert.doesNotMatch(r.out, /\d+ failed/);
});
