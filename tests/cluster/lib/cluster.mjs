// A replicated dstream cluster on loopback for one test file: N processes of
// `dstream serve --cluster FILE --node-id N`, each on its own 127.x.y.z
// address, sharing one S3 bucket and prefix (s3rver, from the environment
// tests/s3/with_s3rver.sh gives its command), and network partitions between
// those addresses made with nftables.
//
//   const c = await startCluster({ nodes: 3 });
//   await c.waitReady();
//   const g = await c.groupOf('/bkt/stream');
//   const leader = await c.leaderOf(g);      // {id, term, node}
//   c.isolate(leader.node); ... c.heal();
//   await c.stop();
//
// Addresses. A cluster takes a block 127.A.B.0/24 of its own (A, B from this
// process's pid and a counter), node i (0-based) on 127.A.B.(i+2); its raft
// and http ports are free ports of that address. Test files that ctest runs at
// the same time thus never share an address, and the partition rules of one
// (which match addresses only) cannot cut another. Linux routes all of 127/8
// to lo; a node's peer connections leave from its own raft address, and the
// test's own requests from 127.0.0.1, which no rule names.
//
// S3. The harness does not start s3rver itself: tests run under
// tests/s3/with_s3rver.sh, which starts it in a process of its own (the
// PUTs of the nodes' chunk flushes are then not handled on the event loop
// that times failovers and drives the load) and gives DSTREAM_TEST_S3_ENDPOINT,
// DSTREAM_TEST_S3_BUCKET and the AWS key pair; with_s3rver.sh also runs Node
// with the legacy OpenSSL provider s3rver's continuation tokens need. Each
// cluster takes a prefix of its own in that bucket, shared by its nodes.
//
// Partitions. nftables rules in a table of this process's own,
// `inet dstream_test_<pid>`, one output chain; partition(a, b) drops every
// packet from a's address to b's and back (connections stall, nothing is
// refused), heal() flushes the chain. The table is deleted when the process
// exits (normally, on an uncaught exception, on SIGINT/SIGTERM/SIGHUP) and
// tables of processes that no longer exist are deleted when a cluster starts.
// The child processes are killed and the temp dirs removed the same way.
//
// groupOf(path) learns a stream's group from the x-ursula-raft-group header
// of a HEAD of the stream sent, without following redirects, to the nodes in
// turn: a follower (or a node hosting no replica of the group) redirects a
// HEAD to the leader naming the group, and a node that knows no leader answers
// 503 naming it. No write is needed, so the stream need not exist.
//
// Environment: DSTREAM_BIN (the binary), DSTREAM_CLUSTER_KEEP=1 (keep the
// temp dir with the node logs node-N.log), DSTREAM_CLUSTER_VERBOSE=1 (print
// the harness's steps), NFT (the nft command; default nft on PATH, /usr/sbin,
// /sbin; prefixed with `sudo -n` when not root).
import { execFileSync, spawn } from 'node:child_process';
import { appendFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const VERBOSE = Boolean(process.env.DSTREAM_CLUSTER_VERBOSE);
const KEEP = process.env.DSTREAM_CLUSTER_KEEP === '1';
export function note(...words) {
    if (VERBOSE) console.log(`[cluster ${new Date().toISOString().slice(11, 23)}]`, ...words);
}

// How long a request of the harness may take (a partition makes some hang).
const REQUEST_MS = 2000;
const START_ANSWER_MS = 30_000;
const STOP_MS = 20_000;

export function serverBinary() {
    const bin = process.env.DSTREAM_BIN;
    if (!bin) throw new Error('DSTREAM_BIN is not set: point it at the dstream binary (e.g. build/dstream)');
    if (!existsSync(bin)) throw new Error(`DSTREAM_BIN=${bin} does not exist`);
    return bin;
}

// The S3 endpoint and bucket of the with_s3rver.sh environment.
export function s3FromEnv() {
    const endpoint = process.env.DSTREAM_TEST_S3_ENDPOINT;
    const bucket = process.env.DSTREAM_TEST_S3_BUCKET;
    if (!endpoint || !bucket || !process.env.AWS_ACCESS_KEY_ID) {
        throw new Error('no S3 endpoint: run the cluster tests under tests/s3/with_s3rver.sh ' +
                        '(DSTREAM_TEST_S3_ENDPOINT, DSTREAM_TEST_S3_BUCKET, AWS_ACCESS_KEY_ID are not set)');
    }
    return { endpoint, bucket };
}

// A free TCP port of `host`.
export function freePort(host) {
    return new Promise((resolve, reject) => {
        const s = net.createServer();
        s.unref();
        s.on('error', reject);
        s.listen(0, host, () => {
            const { port } = s.address();
            s.close(() => resolve(port));
        });
    });
}

let blockCounter = 0;
// 127.A.B: A in 1..254, B in 0..255, eight blocks per pid before two
// processes can meet.
function addressBlock() {
    const n = (process.pid * 8 + blockCounter++) % (254 * 256);
    return `127.${1 + Math.floor(n / 256)}.${n % 256}`;
}

// ------------------------------------------------------------------ cleanup
//
// Everything a process made that must not outlive it: child processes, temp
// dirs, the nftables table. Run once, synchronously (an 'exit' listener
// cannot wait).

const live = { children: new Set(), dirs: new Set(), table: false };
let cleanupInstalled = false;

function cleanupNow() {
    for (const child of live.children) {
        try { child.kill('SIGKILL'); } catch { /* gone */ }
    }
    live.children.clear();
    if (live.table) {
        try { nft(['delete', 'table', 'inet', TABLE]); } catch { /* gone */ }
        live.table = false;
    }
    if (!KEEP) {
        for (const dir of live.dirs) rmSync(dir, { recursive: true, force: true });
        live.dirs.clear();
    }
}

function installCleanup() {
    if (cleanupInstalled) return;
    cleanupInstalled = true;
    process.on('exit', cleanupNow);
    for (const [signal, code] of [['SIGINT', 130], ['SIGTERM', 143], ['SIGHUP', 129]]) {
        process.on(signal, () => {
            cleanupNow();
            process.exit(code);
        });
    }
}

// ------------------------------------------------------------------ nftables

export const TABLE = `dstream_test_${process.pid}`;
const CHAIN = 'out';

function nftCommand() {
    let cmd = process.env.NFT;
    if (!cmd) cmd = ['/usr/sbin/nft', '/sbin/nft'].find((p) => existsSync(p)) ?? 'nft';
    const words = cmd.split(/\s+/).filter(Boolean);
    return process.getuid?.() === 0 ? words : ['sudo', '-n', ...words];
}

function nft(args, input) {
    const [cmd, ...pre] = nftCommand();
    return execFileSync(cmd, [...pre, ...args], {
        input, encoding: 'utf8', stdio: ['pipe', 'pipe', 'pipe'], timeout: 10_000,
    });
}

// Whether nft can change rules here: null, or why not.
export function nftMissing() {
    try {
        nft(['list', 'tables']);
        return null;
    } catch (e) {
        return `nft cannot list tables (${e.message.split('\n')[0]}): install nftables and run as root`;
    }
}

function pidAlive(pid) {
    try {
        process.kill(pid, 0);
        return true;
    } catch (e) {
        return e.code === 'EPERM';
    }
}

// Deletes the tables of test processes that died without cleaning up (a
// SIGKILL of the runner). Best effort: no nft, no sweep.
function sweepStaleTables() {
    let text;
    try {
        text = nft(['list', 'tables']);
    } catch {
        return;
    }
    for (const m of text.matchAll(/^table inet (dstream_test_(\d+))$/gm)) {
        const pid = Number(m[2]);
        if (pid !== process.pid && !pidAlive(pid)) {
            try { nft(['delete', 'table', 'inet', m[1]]); } catch { /* raced */ }
        }
    }
}

function ensureTable() {
    if (live.table) return;
    installCleanup();
    nft(['-f', '-'], `add table inet ${TABLE}\n` +
        `add chain inet ${TABLE} ${CHAIN} { type filter hook output priority 0; policy accept; }\n`);
    live.table = true;
}

// The address pairs cut off from each other, as rules of this process's
// table (every change rewrites the chain in one nft transaction).
export class Partitions {
    constructor() {
        this.pairs = [];
    }

    #apply() {
        ensureTable();
        let script = `flush chain inet ${TABLE} ${CHAIN}\n`;
        for (const [a, b] of this.pairs) {
            script += `add rule inet ${TABLE} ${CHAIN} ip saddr ${a} ip daddr ${b} drop\n`;
            script += `add rule inet ${TABLE} ${CHAIN} ip saddr ${b} ip daddr ${a} drop\n`;
        }
        nft(['-f', '-'], script);
    }

    // Drops every packet from address a to b and from b to a.
    cut(a, b) {
        if (a === b) throw new Error(`cut(${a}, ${a})`);
        if (!this.pairs.some(([p, q]) => (p === a && q === b) || (p === b && q === a))) this.pairs.push([a, b]);
        this.#apply();
    }

    heal() {
        this.pairs = [];
        if (live.table) nft(['flush', 'chain', 'inet', TABLE, CHAIN]);
    }

    // The table as nft lists it, for failure messages.
    list() {
        if (!live.table) return '(no table)';
        try {
            return nft(['list', 'table', 'inet', TABLE]);
        } catch (e) {
            return `(nft list failed: ${e.message})`;
        }
    }
}

// ------------------------------------------------------------------ HTTP

async function fetchWithin(url, init = {}, ms = REQUEST_MS) {
    return fetch(url, { ...init, signal: AbortSignal.timeout(ms) });
}

async function getJson(url, ms = REQUEST_MS) {
    const res = await fetchWithin(url, {}, ms);
    const text = await res.text();
    if (res.status !== 200) throw new Error(`GET ${url}: ${res.status} ${text.slice(0, 200)}`);
    return JSON.parse(text);
}

// ------------------------------------------------------------------ a node

class ClusterNode {
    constructor(cluster, index, { id, httpHost, httpPort, raftHost, raftPort, dataDir, logFile }) {
        this.cluster = cluster;
        this.index = index;
        this.id = id;
        this.httpHost = httpHost;
        this.httpPort = httpPort;
        this.raftHost = raftHost;
        this.raftPort = raftPort;
        this.dataDir = dataDir;
        this.logFile = logFile;
        this.url = `http://${httpHost}:${httpPort}`;
        this.http = `${httpHost}:${httpPort}`;
        this.child = null;
        this.exited = null;
        this.exitPromise = null;
        this.tailText = '';
        this.starts = 0;
    }

    alive() {
        return this.child !== null && this.exited === null;
    }

    // No admin listener unless the cluster file names one (startCluster({admin:
    // true})) or the test names one: its default address is one per machine.
    adminArgs() {
        const named = [...this.cluster.extraArgs, ...(this.cluster.nodeArgs[this.index] ?? [])];
        return this.admin || named.includes('--admin-listen') ? [] : ['--admin-listen', 'off'];
    }

    // Spawns the process and returns once it answers HTTP (any status).
    async start() {
        if (this.alive()) throw new Error(`node ${this.id} is running`);
        const c = this.cluster;
        const args = ['serve', '--cluster', c.clusterFile, '--node-id', String(this.id),
                      '--data-dir', this.dataDir,
                      '--cold-store', `s3://${c.s3.bucket}/${c.s3.prefix}`, '--s3-endpoint', c.s3.endpoint,
                      '--log-level', c.logLevel, ...this.adminArgs(), ...c.extraArgs,
                      ...(c.nodeArgs[this.index] ?? [])];
        this.starts += 1;
        appendFileSync(this.logFile, `\n==== start ${this.starts}: ${c.bin} ${args.join(' ')}\n`);
        const child = spawn(c.bin, args, { stdio: ['ignore', 'pipe', 'pipe'], env: process.env });
        this.child = child;
        this.exited = null;
        live.children.add(child);
        this.exitPromise = new Promise((resolve) => {
            child.on('exit', (code, signal) => {
                this.exited = { code, signal };
                live.children.delete(child);
                appendFileSync(this.logFile, `==== exit ${JSON.stringify(this.exited)}\n`);
                resolve(this.exited);
            });
        });
        const keep = (chunk) => {
            appendFileSync(this.logFile, chunk);
            this.tailText += chunk.toString();
            if (this.tailText.length > 64 * 1024) this.tailText = this.tailText.slice(-32 * 1024);
        };
        child.stdout.on('data', keep);
        child.stderr.on('data', keep);
        const deadline = Date.now() + START_ANSWER_MS;
        while (true) {
            if (this.exited) {
                throw new Error(`node ${this.id} exited ${JSON.stringify(this.exited)} before answering HTTP:\n${this.log()}`);
            }
            try {
                const res = await fetchWithin(`${this.url}/__ursula/ready`, {}, 1000);
                await res.arrayBuffer();
                break;
            } catch { /* not yet */ }
            if (Date.now() > deadline) {
                throw new Error(`node ${this.id} did not answer on ${this.url} within ${START_ANSWER_MS} ms:\n${this.log()}`);
            }
            await sleep(25);
        }
        note(`node ${this.id} answers on ${this.url} (pid ${child.pid})`);
        return this;
    }

    // Sends `signal` and waits for the exit: {code, signal}. A SIGTERM that
    // has not ended the process within STOP_MS is followed by a SIGKILL.
    async stop(signal = 'SIGTERM') {
        if (!this.alive()) return this.exited;
        this.child.kill(signal);
        const timer = setTimeout(() => { if (this.alive()) this.child.kill('SIGKILL'); }, STOP_MS);
        const how = await this.exitPromise;
        clearTimeout(timer);
        note(`node ${this.id} stopped by ${signal}: ${JSON.stringify(how)}`);
        return how;
    }

    async kill9() {
        return this.stop('SIGKILL');
    }

    // Starts again on the same addresses and data dir once exited.
    async restart() {
        if (this.alive()) throw new Error(`restart() of node ${this.id}, which is running`);
        return this.start();
    }

    // The last output of the process (all of it is in logFile).
    log(n = 8000) {
        return this.tailText.slice(-n);
    }

    async ready() {
        try {
            const res = await fetchWithin(`${this.url}/__ursula/ready`, {}, 1000);
            await res.arrayBuffer();
            return res.status === 200;
        } catch {
            return false;
        }
    }

    status(ms = REQUEST_MS) {
        return getJson(`${this.url}/__ursula/cluster`, ms);
    }
}

// ------------------------------------------------------------------ the cluster

class Cluster {
    constructor(opts) {
        Object.assign(this, opts);
        this.nodes = [];
        this.groupCache = new Map();
        this.cuts = new Partitions();
    }

    node(id) {
        const n = this.nodes.find((x) => x.id === Number(id));
        if (!n) throw new Error(`no node ${id}`);
        return n;
    }

    // The node whose http address is `hostPort`, or undefined.
    nodeByHttp(hostPort) {
        return this.nodes.find((x) => x.http === hostPort);
    }

    alive() {
        return this.nodes.filter((n) => n.alive());
    }

    // Resolves once every running node answers /__ursula/ready 200.
    async waitReady(timeoutMs = 30_000, nodes = this.alive()) {
        const deadline = Date.now() + timeoutMs;
        while (true) {
            const states = await Promise.all(nodes.map((n) => n.ready()));
            if (states.every(Boolean)) return;
            if (Date.now() > deadline) {
                const notReady = nodes.filter((_, i) => !states[i]).map((n) => n.id);
                throw new Error(`nodes ${notReady.join(', ')} not ready within ${timeoutMs} ms\n${await this.describe()}`);
            }
            await sleep(50);
        }
    }

    // The /__ursula/cluster JSON of nodes[i].
    status(i, ms) {
        return this.nodes[i].status(ms);
    }

    // Polls until the nodes of `among` (default: the running ones) that host
    // `group` and answer agree on its leader: each reports the same term, the
    // highest any reports, and the same leader id (not 0), and the leader, if
    // among them, reports itself leader at that term. Resolves to
    // {id, term, node}.
    async leaderOf(group, { timeoutMs = 15_000, among = this.alive(), differentFrom = null, aboveTerm = -1 } = {}) {
        const deadline = Date.now() + timeoutMs;
        let last = [];
        while (true) {
            const answers = await Promise.all(among.map(async (n) => {
                try {
                    const st = await n.status(1000);
                    return { node: n, g: st.groups.find((x) => x.group === group) };
                } catch (e) {
                    return { node: n, error: e.message };
                }
            }));
            last = answers.map((a) => ({ node: a.node.id, ...(a.g ?? {}), ...(a.error ? { error: a.error } : {}) }));
            const hosting = answers.filter((a) => a.g);
            if (hosting.length > 0) {
                const term = Math.max(...hosting.map((a) => a.g.term));
                const leaders = new Set(hosting.map((a) => a.g.leader));
                const id = hosting[0].g.leader;
                const allAtTerm = hosting.every((a) => a.g.term === term);
                const self = hosting.find((a) => a.node.id === id);
                const selfOk = !self || self.g.role === 'leader';
                if (allAtTerm && leaders.size === 1 && id !== 0 && selfOk &&
                    id !== differentFrom && term > aboveTerm) {
                    return { id, term, node: this.node(id) };
                }
            }
            if (Date.now() > deadline) {
                throw new Error(`the nodes ${among.map((n) => n.id).join(', ')} did not agree on a leader of group ` +
                                `${group} within ${timeoutMs} ms` +
                                `${differentFrom !== null ? ` (other than ${differentFrom})` : ''}: ${JSON.stringify(last)}`);
            }
            await sleep(30);
        }
    }

    // The group of a stream, from the x-ursula-raft-group header of a HEAD
    // sent without following redirects to each running node in turn (see the
    // top of this file).
    async groupOf(streamPath, { timeoutMs = 10_000 } = {}) {
        if (this.groupCache.has(streamPath)) return this.groupCache.get(streamPath);
        const deadline = Date.now() + timeoutMs;
        const seen = [];
        while (Date.now() < deadline) {
            for (const n of this.alive()) {
                try {
                    const res = await fetchWithin(n.url + streamPath, { method: 'HEAD', redirect: 'manual' }, 1000);
                    const g = res.headers.get('x-ursula-raft-group');
                    seen.push(`node ${n.id}: ${res.status} group=${g}`);
                    if (g !== null) {
                        this.groupCache.set(streamPath, Number(g));
                        return Number(g);
                    }
                } catch (e) {
                    seen.push(`node ${n.id}: ${e.message}`);
                }
            }
            await sleep(50);
        }
        throw new Error(`no node named the group of ${streamPath} (HEAD, no redirects followed): ${seen.slice(-10).join('; ')}`);
    }

    // ---------------------------------------------------------- partitions

    // Drops all traffic between two nodes (both directions).
    partition(a, b) {
        this.cuts.cut(a.raftHost, b.raftHost);
        note(`partition ${a.id} <-> ${b.id}`);
    }

    // Cuts `node` off from every other node (the test still reaches it).
    isolate(node) {
        for (const other of this.nodes) if (other !== node) this.cuts.cut(node.raftHost, other.raftHost);
        note(`isolate ${node.id}`);
    }

    heal() {
        this.cuts.heal();
        note('heal');
    }

    // ---------------------------------------------------------- diagnostics

    // Every node's state and last log lines, for failure messages.
    async describe({ logLines = 15 } = {}) {
        const parts = [];
        for (const n of this.nodes) {
            let st;
            if (n.alive()) {
                try {
                    st = JSON.stringify(await n.status(1000));
                } catch (e) {
                    st = `(status: ${e.message})`;
                }
            } else {
                st = `(not running: ${JSON.stringify(n.exited)})`;
            }
            const tail = n.log().split('\n').slice(-logLines).join('\n');
            parts.push(`--- node ${n.id} ${n.url} ${st}\n${tail}`);
        }
        if (this.cuts.pairs.length) parts.push(`--- cut: ${JSON.stringify(this.cuts.pairs)}`);
        return parts.join('\n');
    }

    async stop() {
        if (this.stopped) return;
        this.stopped = true;
        this.heal();
        await Promise.all(this.nodes.map((n) => n.kill9()));
        if (!KEEP) {
            rmSync(this.root, { recursive: true, force: true });
            live.dirs.delete(this.root);
        } else {
            console.log(`cluster kept in ${this.root}`);
        }
    }
}

// Writes the cluster file and starts every node; resolves once each answers
// HTTP (not yet ready: see waitReady()). `extraArgs` go to every node,
// `nodeArgs[i]` to node i only; `s3` ({endpoint, bucket}) defaults to the
// with_s3rver.sh environment.
// `admin`: each node's admin listener on a free port, named in the cluster
// file (node.admin is its URL).
export async function startCluster({ nodes = 3, replicas = 3, groups = 8, extraArgs = [], nodeArgs = [],
                                     s3 = s3FromEnv(), clusterId = 'test-cluster', logLevel = 'warn',
                                     admin = false } = {}) {
    const bin = serverBinary();
    installCleanup();
    sweepStaleTables();
    const root = mkdtempSync(path.join(os.tmpdir(), 'dstream-cluster-'));
    live.dirs.add(root);
    const block = addressBlock();
    const prefix = `cluster-${process.pid}-${Date.now().toString(36)}-${blockCounter}`;
    const cluster = new Cluster({
        bin, root, replicas, groups, extraArgs, nodeArgs, clusterId, logLevel,
        s3: { ...s3, prefix }, clusterFile: path.join(root, 'cluster.toml'),
    });
    let text = `cluster_id = "${clusterId}"\ngroups = ${groups}\nreplicas = ${replicas}\n`;
    for (let i = 0; i < nodes; i++) {
        const host = `${block}.${i + 2}`;
        const raftPort = await freePort(host);
        let httpPort = await freePort(host);
        while (httpPort === raftPort) httpPort = await freePort(host);
        const dataDir = path.join(root, `node-${i + 1}`);
        mkdirSync(dataDir);
        cluster.nodes.push(new ClusterNode(cluster, i, {
            id: i + 1, httpHost: host, httpPort, raftHost: host, raftPort,
            dataDir, logFile: path.join(root, `node-${i + 1}.log`),
        }));
        text += `\n[[node]]\nid = ${i + 1}\nraft = "${host}:${raftPort}"\nhttp = "${host}:${httpPort}"\n`;
        if (admin) {
            let adminPort = await freePort(host);
            while (adminPort === raftPort || adminPort === httpPort) adminPort = await freePort(host);
            text += `admin = "${host}:${adminPort}"\n`;
            cluster.nodes[i].admin = `http://${host}:${adminPort}`;
        }
    }
    writeFileSync(cluster.clusterFile, text);
    note(`cluster of ${nodes} in ${root} on ${block}.0/24, s3 ${s3.endpoint}/${s3.bucket}/${prefix}`);
    try {
        await Promise.all(cluster.nodes.map((n) => n.start()));
    } catch (e) {
        await cluster.stop();
        throw e;
    }
    return cluster;
}

// The sum of every sample of the metric family `name` on `node`
// (/__ursula/metrics), 0 when it has none.
export async function metricTotal(node, name) {
    const res = await fetchWithin(`${node.url}/__ursula/metrics`, {}, REQUEST_MS);
    const text = await res.text();
    let total = 0;
    for (const line of text.split('\n')) {
        if (line.startsWith(`${name}{`) || line.startsWith(`${name} `)) total += Number(line.split(' ').pop());
    }
    return total;
}

// ------------------------------------------------------------------ reads and writes

const OCTET = { 'content-type': 'application/octet-stream' };

// A request through `node`, following redirects, retried on 503 and on
// connection errors (timeouts included), each attempt bounded by
// `attemptMs`, until `deadlineMs` passes. Resolves to {res, text, attempts};
// the last answer when none succeeded, or throws the last error.
export async function requestRetrying(cluster, nodeOrNull, pathAndQuery, init,
                                      { deadlineMs = 15_000, attemptMs = 3000, pauseMs = 50 } = {}) {
    const deadline = Date.now() + deadlineMs;
    let attempts = 0;
    let lastError = null;
    let lastAnswer = null;
    while (Date.now() < deadline) {
        const alive = cluster.alive();
        const node = nodeOrNull ?? alive[attempts % alive.length];
        attempts += 1;
        try {
            const res = await fetchWithin(node.url + pathAndQuery, init, attemptMs);
            const text = await res.text();
            if (res.status !== 503) return { res, text, attempts };
            lastAnswer = { res, text, attempts };
        } catch (e) {
            lastError = e;
        }
        await sleep(pauseMs);
    }
    if (lastAnswer) return lastAnswer;
    throw new Error(`${init?.method ?? 'GET'} ${pathAndQuery}: no answer within ${deadlineMs} ms ` +
                    `(${attempts} attempts): ${lastError?.message} ${lastError?.cause?.code ?? ''}`);
}

export function createStream(cluster, node, streamPath, opts) {
    return requestRetrying(cluster, node, streamPath, { method: 'PUT', headers: OCTET }, opts);
}

export function append(cluster, node, streamPath, body, headers = {}, opts) {
    return requestRetrying(cluster, node, streamPath,
                           { method: 'POST', headers: { ...OCTET, ...headers }, body }, opts);
}

// The whole stream read through `node` (following redirects), from -1 to the
// tail, following Stream-Next-Offset; `query` is added to each read (e.g.
// 'consistency=leader'). A 503 (no leader known for a moment, as after a
// heal) is repeated for up to `retry503Ms`.
export async function readAll(node, streamPath, { query = '', ms = 5000, retry503Ms = 10_000 } = {}) {
    const parts = [];
    let offset = '-1';
    const retryUntil = Date.now() + retry503Ms;
    for (let i = 0; i < 100_000; i++) {
        const target = `${node.url}${streamPath}?offset=${encodeURIComponent(offset)}${query ? `&${query}` : ''}`;
        const res = await fetchWithin(target, {}, ms);
        const body = Buffer.from(await res.arrayBuffer());
        if (res.status === 503 && Date.now() < retryUntil) {
            await sleep(50);
            continue;
        }
        if (res.status !== 200) throw new Error(`GET ${target}: ${res.status} ${body.toString().slice(0, 300)}`);
        parts.push(body);
        offset = res.headers.get('stream-next-offset');
        if (res.headers.get('stream-up-to-date') === 'true') return Buffer.concat(parts);
        if (body.length === 0) throw new Error(`GET ${target}: an empty read that is not up to date`);
    }
    throw new Error(`${streamPath}: the read never reached the tail`);
}

// What `node` itself holds of a stream, through live long-poll reads (which a
// follower serves itself, without redirecting): from -1 until a long-poll
// waits `waitMs` for nothing. Redirects are not followed: an answer other
// than 200 or 204 throws.
export async function readLocal(node, streamPath, { waitMs = 200 } = {}) {
    const parts = [];
    let offset = '-1';
    for (let i = 0; i < 100_000; i++) {
        const target = `${node.url}${streamPath}?offset=${encodeURIComponent(offset)}&live=long-poll&timeout_ms=${waitMs}`;
        const res = await fetchWithin(target, { redirect: 'manual' }, waitMs + 5000);
        const body = Buffer.from(await res.arrayBuffer());
        if (res.status === 204) return Buffer.concat(parts);
        if (res.status !== 200) {
            throw new Error(`GET ${target} (node ${node.id}, live read): ${res.status} ` +
                            `location=${res.headers.get('location')} ${body.toString().slice(0, 300)}`);
        }
        parts.push(body);
        offset = res.headers.get('stream-next-offset');
    }
    throw new Error(`${streamPath}: the local read of node ${node.id} never reached its tail`);
}
