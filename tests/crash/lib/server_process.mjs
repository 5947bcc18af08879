// A durable dstream server as a child process that tests crash and restart:
// spawned on a data dir with extra flags and environment, killed with SIGKILL
// or stopped with SIGTERM, restarted on the same port and data dir. It keeps
// the tail of its log and counts what recovery reported.
import { spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';

import { answers } from '../../http/lib/server.mjs';
import { within } from '../../http/lib/within.mjs';

const START_TIMEOUT_MS = 60_000;
const CLEAN_STOP_TIMEOUT_MS = 30_000;
// A signalled process is gone by then (a SIGTERM escalates to SIGKILL sooner).
const EXIT_TIMEOUT_MS = CLEAN_STOP_TIMEOUT_MS + 10_000;

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export class ServerProcess {
    // `args`: extra `dstream serve` flags; `env`: added to this process's.
    constructor(bin, dir, { args = [], env = {} } = {}) {
        this.bin = bin;
        this.dir = dir;
        this.args = args;
        this.env = env;
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
        // No admin listener unless the test names one (its default address is one per machine).
        const admin = this.args.includes('--admin-listen') ? [] : ['--admin-listen', 'off'];
        const child = spawn(this.bin, ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', this.dir,
                                       '--log-level', 'info', ...admin, ...this.args],
                            { stdio: ['ignore', 'pipe', 'pipe'], env: { ...process.env, ...this.env } });
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
        await this.#signal('SIGKILL');
    }

    // SIGTERM: the server stops serving and flushes its log; it must exit 0.
    async stopCleanly() {
        const timer = setTimeout(() => this.child.kill('SIGKILL'), CLEAN_STOP_TIMEOUT_MS);
        try {
            await this.#signal('SIGTERM');
        } finally {
            clearTimeout(timer);
        }
    }

    async #signal(name) {
        if (!this.alive()) {
            throw new Error(`the server died before this test stopped it: ${JSON.stringify(this.child?.exited)}` +
                            ` (a signal this test did not send, or a crash)\n${this.tail()}`);
        }
        this.child.kill(name);
        const how = await within(this.exit, EXIT_TIMEOUT_MS, () => `the server to exit after ${name}\n${this.tail()}`);
        const expected = name === 'SIGKILL' ? how.signal === 'SIGKILL' : how.code === 0;
        if (!expected) {
            throw new Error(`server exit after ${name}: ${JSON.stringify(how)}\n${this.tail()}`);
        }
    }

    // Best effort, for cleanup.
    async stop() {
        if (!this.alive()) return;
        this.child.kill('SIGKILL');
        let timer;
        await Promise.race([this.exit, new Promise((r) => { timer = setTimeout(r, 5000); })]);
        clearTimeout(timer);
    }

    // Resident memory in bytes (Linux /proc), or null once it has exited.
    rss() {
        if (!this.alive()) return null;
        try {
            const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${this.child.pid}/status`, 'latin1'));
            return m ? Number(m[1]) * 1024 : null;
        } catch {
            return null;
        }
    }

    tail(n = 4000) {
        return this.log.slice(-n);
    }
}
