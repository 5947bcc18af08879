// Starts a dstream server for one test file.
//
//   const srv = await startServer();   // {url, host, port, stop(), log(), signal(), waitExit(), restart()}
//   ...
//   await srv.stop();
//
// The binary comes from env DSTREAM_BIN (ctest sets it to the built target).
// The server listens on a free 127.0.0.1 port with a fresh temp --data-dir and
// --memory; startServer() returns once it answers HTTP.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, appendFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export function freePort() {
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

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

// Whether a server answers HTTP at `url`.
export async function answers(url) {
    try {
        const res = await fetch(url + '/', { signal: AbortSignal.timeout(1000) });
        await res.arrayBuffer();
        return true;
    } catch {
        return false;
    }
}

export function serverBinary() {
    const bin = process.env.DSTREAM_BIN;
    if (!bin) {
        throw new Error('DSTREAM_BIN is not set: point it at the dstream binary (e.g. build/dstream)');
    }
    if (!existsSync(bin)) throw new Error(`DSTREAM_BIN=${bin} does not exist`);
    return bin;
}

// A whole suite run against another configuration: DSTREAM_TEST_SERVER_ARGS
// ("--flag value ...", word-split) go to every durable server the tests
// start, except the flags a test names itself, and DSTREAM_TEST_DURABLE=1 runs
// durable every server whose test does not ask for `memory: true` itself
// (an S3 cold store needs a durable node). tests/s3/CMakeLists.txt runs the
// suite so, against s3rver.
export const suiteDurable = process.env.DSTREAM_TEST_DURABLE === '1';

function suiteArgs(testArgs) {
    const words = (process.env.DSTREAM_TEST_SERVER_ARGS ?? '').split(/\s+/).filter(Boolean);
    const named = new Set(testArgs.filter((a) => a.startsWith('--')).map((a) => a.split('=')[0]));
    const out = [];
    for (let i = 0; i < words.length; i++) {
        const takesValue = i + 1 < words.length && !words[i + 1].startsWith('--');
        const pair = takesValue ? [words[i], words[++i]] : [words[i]];
        if (!named.has(pair[0])) out.push(...pair);
    }
    return out;
}

async function startOnce(bin, { extraArgs, memory, dataDir, port: fixedPort, ownsDir, fileLimit }) {
    const port = fixedPort ?? (await freePort());
    // Whether stop() removes the data dir: the test's own dir never, a temp
    // dir made here (or inherited through restarts) always.
    const ownDir = ownsDir ?? dataDir === undefined;
    const dir = dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'dstream-http-'));
    const args = ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dir,
                  ...(memory ? ['--memory'] : []), '--log-level', 'warn',
                  ...(memory ? [] : suiteArgs(extraArgs)), ...extraArgs];
    // A descriptor limit is set by a shell that then becomes the server.
    const child = fileLimit
        ? spawn('sh', ['-c', `ulimit -n ${fileLimit} && exec "$0" "$@"`, bin, ...args],
                { stdio: ['ignore', 'pipe', 'pipe'] })
        : spawn(bin, args, { stdio: ['ignore', 'pipe', 'pipe'] });
    let log = '';
    const keep = (chunk) => {
        if (process.env.DEBUG_SERVER_LOG) appendFileSync(process.env.DEBUG_SERVER_LOG, chunk);
        log += chunk.toString();
        if (log.length > 64 * 1024) log = log.slice(-32 * 1024);
    };
    child.stdout.on('data', keep);
    child.stderr.on('data', keep);
    let exited = null;
    const exitPromise = new Promise((resolve) => {
        child.on('exit', (code, signal) => {
            exited = { code, signal };
            resolve(exited);
        });
    });
    const url = `http://127.0.0.1:${port}`;
    const cleanupDir = () => { if (ownDir) rmSync(dir, { recursive: true, force: true }); };

    const deadline = Date.now() + 10_000;
    while (true) {
        if (exited) {
            cleanupDir();
            return { failed: `server exited (${JSON.stringify(exited)}) before answering:\n${log}` };
        }
        if (await answers(url)) break;
        if (Date.now() > deadline) {
            child.kill('SIGKILL');
            cleanupDir();
            throw new Error(`server did not answer on ${url} within 10 s:\n${log}`);
        }
        await sleep(50);
    }

    let stopped = false;
    const self = {
        url,
        dataDir: dir,
        host: '127.0.0.1',
        port,
        pid: child.pid,
        log: () => log,
        alive: () => exited === null,
        async stop() {
            if (stopped) return;
            stopped = true;
            if (exited === null) {
                child.kill('SIGTERM');
                const timer = setTimeout(() => { if (exited === null) child.kill('SIGKILL'); }, 5000);
                await exitPromise;
                clearTimeout(timer);
            }
            cleanupDir();
        },
        // Sends a signal ('SIGTERM', 'SIGINT', ...) and returns at once.
        signal(name) {
            child.kill(name);
        },
        // Resolves to {code, signal, ms} once the process has exited (ms: since
        // this call), or to null when it is still running after `ms`.
        async waitExit(ms = 15_000) {
            const started = Date.now();
            let timer;
            const how = await Promise.race([
                exitPromise,
                new Promise((r) => { timer = setTimeout(() => r(null), ms); }),
            ]);
            clearTimeout(timer);
            return how && { ...how, ms: Date.now() - started };
        },
        // Stops with SIGKILL (no shutdown work) and starts again on the same
        // port and data dir; the returned object replaces this one.
        async crashAndRestart() {
            if (exited === null) {
                child.kill('SIGKILL');
                await exitPromise;
            }
            return self.restart();
        },
        // Starts again on the same port and data dir once the process has
        // exited; the returned object replaces this one.
        async restart() {
            if (exited === null) throw new Error('restart() needs a server that has exited');
            stopped = true;
            const again = await startOnce(bin, { extraArgs, memory, dataDir: dir, port, ownsDir: ownDir, fileLimit });
            if (again.failed) throw new Error(again.failed);
            return again;
        },
    };
    return self;
}

// Starts the server; retries on another port when the chosen one was taken
// between probing and binding.
// `memory: false` runs the durable default, `memory: true` a memory node
// whatever the suite's configuration; `dataDir` keeps the data in a
// directory the caller owns; `fileLimit` caps the server's descriptors.
export async function startServer({ extraArgs = [], memory = !suiteDurable, dataDir, fileLimit } = {}) {
    const bin = serverBinary();
    let last = '';
    for (let attempt = 0; attempt < 5; attempt++) {
        const r = await startOnce(bin, { extraArgs, memory, dataDir, fileLimit });
        if (!r.failed) return r;
        last = r.failed;
    }
    throw new Error(`could not start ${bin}: ${last}`);
}
