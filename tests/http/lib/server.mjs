// Starts a dstream server for one test file.
//
//   const srv = await startServer();   // {url, host, port, stop(), log(), signal(), waitExit(), restart()}
//   ...
//   await srv.stop();
//
// The binary comes from env DSTREAM_BIN (ctest sets it to the built target).
// The server listens on a free 127.0.0.1 port with a fresh temp --data-dir and
// --memory; startServer() returns once it answers HTTP.
//
// DSTREAM_TEST_CLUSTER=1 (tests/cluster/http_suite.sh) puts a 3-node cluster
// behind startServer() instead: see clusterServer() below.
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync, existsSync, appendFileSync, readFileSync } from 'node:fs';
import https from 'node:https';
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

// Whether a server answers HTTPS at `url`, checked against the root `ca`.
function answersTls(url, ca) {
    return new Promise((resolve) => {
        const req = https.get(url + '/', { ca, agent: false, timeout: 1000 }, (res) => {
            res.resume();
            res.on('end', () => resolve(true));
        });
        req.on('timeout', () => req.destroy());
        req.on('error', () => resolve(false));
    });
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

// DSTREAM_TEST_TLS_DIR (tests/tls/http_suite.sh): every server speaks HTTPS
// with the certificate made there (tests/tls/make_certs.sh), unless a test
// gives its own; fetch trusts its root by NODE_EXTRA_CA_CERTS, raw
// connections by lib/http.mjs's rawConnect().
const suiteTlsDir = process.env.DSTREAM_TEST_TLS_DIR ?? '';
export const suiteOverTls = suiteTlsDir !== '';

// For a test's options: `{ skip: notOverTls('why') }` skips it, with the
// reason, when the suite runs over HTTPS only.
export function notOverTls(why) {
    return suiteOverTls ? `not over TLS: ${why}` : false;
}

// DSTREAM_TEST_HTTP2=1 (tests/tls/http_suite.sh --h2): the suite's fetch
// speaks HTTP/2 (tests/tls/h2_fetch.mjs); raw connections stay HTTP/1.1.
export const suiteOverH2 = suiteOverTls && process.env.DSTREAM_TEST_HTTP2 === '1';

// `{ skip: notOverH2('why') }` skips a test, with the reason, over HTTP/2.
export function notOverH2(why) {
    return suiteOverH2 ? `not over HTTP/2: ${why}` : false;
}

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

// Over HTTP/2 (tests/tls/h2_fetch.mjs) the suite's fetch keeps one session
// per origin, and undici 6's keeps a session whose server was killed and
// hangs the next request on it: a server that starts again on the same port
// gets a fresh client.
const forgetConnections = globalThis[Symbol.for('dstream.test.forgetConnections')] ?? (() => {});

async function startOnce(bin, { extraArgs, memory, dataDir, port: fixedPort, ownsDir, fileLimit, ca }) {
    const port = fixedPort ?? (await freePort());
    // Whether stop() removes the data dir: the test's own dir never, a temp
    // dir made here (or inherited through restarts) always.
    const ownDir = ownsDir ?? dataDir === undefined;
    const dir = dataDir ?? mkdtempSync(path.join(os.tmpdir(), 'dstream-http-'));
    // No admin listener unless the test names one: the default address is
    // one per machine, and the test files run at once.
    const admin = extraArgs.includes('--admin-listen') ? [] : ['--admin-listen', 'off'];
    const suiteTls = suiteTlsDir && !extraArgs.includes('--tls-cert')
        ? ['--tls-cert', path.join(suiteTlsDir, 'a.pem'), '--tls-key', path.join(suiteTlsDir, 'a.key')]
        : [];
    if (suiteTls.length > 0) ca ??= readFileSync(path.join(suiteTlsDir, 'ca.pem'));
    const args = ['serve', '--listen', `127.0.0.1:${port}`, '--data-dir', dir,
                  ...(memory ? ['--memory'] : []), '--log-level', 'warn', ...admin,
                  ...(memory ? [] : suiteArgs(extraArgs)), ...suiteTls, ...extraArgs];
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
    // With --tls-cert the listener speaks HTTPS; `ca` is the root its
    // certificate is checked against (tests/tls/make_certs.sh).
    const tls = extraArgs.includes('--tls-cert') || suiteTls.length > 0;
    const url = `${tls ? 'https' : 'http'}://127.0.0.1:${port}`;
    const cleanupDir = () => { if (ownDir) rmSync(dir, { recursive: true, force: true }); };

    const deadline = Date.now() + 10_000;
    while (true) {
        if (exited) {
            cleanupDir();
            return { failed: `server exited (${JSON.stringify(exited)}) before answering:\n${log}` };
        }
        if (await (tls ? answersTls(url, ca) : answers(url))) break;
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
        // Where a client that follows no redirect (a raw socket) sends what a
        // cluster's follower would redirect: here the server itself.
        leaderHost: '127.0.0.1',
        leaderPort: port,
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
            forgetConnections();
            const again = await startOnce(bin, { extraArgs, memory, dataDir: dir, port, ownsDir: ownDir, fileLimit, ca });
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
export async function startServer({ extraArgs = [], memory, dataDir, fileLimit, ca } = {}) {
    if (onCluster) return clusterServer({ extraArgs, memory, dataDir, fileLimit });
    memory ??= !suiteDurable;
    const bin = serverBinary();
    let last = '';
    for (let attempt = 0; attempt < 5; attempt++) {
        const r = await startOnce(bin, { extraArgs, memory, dataDir, fileLimit, ca });
        if (!r.failed) return r;
        last = r.failed;
    }
    throw new Error(`could not start ${bin}: ${last}`);
}

// ------------------------------------------------------------------ cluster mode
//
// DSTREAM_TEST_CLUSTER=1, under tests/s3/with_s3rver.sh: startServer() starts
// a 3-node cluster of one group (tests/cluster/lib/cluster.mjs: durable
// nodes, the cold store in the s3rver bucket) and answers an object of the
// same shape whose url, host and port are a follower's, so that every write
// is redirected (307) to the leader and reads are the follower's own or
// redirected. The global fetch follows 307/308 with any body
// (tests/conformance/follow_redirects.mjs, installed once), as a client of a
// cluster must; raw sockets (RawConn) see the 307s themselves.
//
// What each member means on a cluster:
//   url host port     the follower's
//   leaderHost leaderPort   the group's leader when the cluster started, for
//                     raw sockets, which follow no redirect (a single server:
//                     its own host and port)
//   dataDir           the follower's data dir (the cold store is shared:
//                     coldObjects() of lib/files.mjs finds the cluster's
//                     prefix in DSTREAM_TEST_SERVER_ARGS, set here)
//   stop()            stops every node
//   log()             every node's last output, one after the other
//   alive()           whether every node runs
//   crashAndRestart() SIGKILLs every node and starts them again on the same
//                     addresses and data dirs (the whole cluster crashes);
//                     the returned object talks to a follower again
//   signal() waitExit() restart()   throw: a signal to, or the exit of, one
//                     process is single-node machinery; such tests are
//                     skipped with `skip: notOnCluster(why)`
// startServer() throws for what a cluster cannot be: `memory: true` (a
// cluster node is durable), `dataDir` (each node has its own), `fileLimit`.
// `extraArgs` go to every node. DSTREAM_TEST_SERVER_ARGS from the
// environment is not used (the harness gives the cold store).
export const onCluster = process.env.DSTREAM_TEST_CLUSTER === '1';

// For a test's options: `{ skip: notOnCluster('why') }` skips it, with the
// reason, in cluster mode only.
export function notOnCluster(why) {
    return onCluster ? `not on a cluster: ${why}` : false;
}

let clusterLib = null;
async function clusterLibrary() {
    if (clusterLib) return clusterLib;
    const lib = await import('../../cluster/lib/cluster.mjs');
    const { followRedirects } = await import('../../conformance/follow_redirects.mjs');
    followRedirects();
    clusterLib = lib;
    return lib;
}

function notOnClusterError(what) {
    return new Error(`${what}: not on a cluster (DSTREAM_TEST_CLUSTER=1); ` +
                     'mark the test `skip: notOnCluster(...)` (lib/server.mjs) or leave its file out of ' +
                     'tests/cluster/http_suite.sh');
}

// The answer of startServer() around a running, ready cluster of one group.
async function throughFollower(cluster) {
    const leader = await cluster.leaderOf(0);
    const follower = cluster.nodes.find((n) => n.id !== leader.id);
    // coldObjects() and objectsBeingWritten() (lib/files.mjs) read the
    // suite's cold store from here; the newest cluster's prefix wins.
    process.env.DSTREAM_TEST_SERVER_ARGS =
        `--cold-store s3://${cluster.s3.bucket}/${cluster.s3.prefix} --s3-endpoint ${cluster.s3.endpoint}`;
    let stopped = false;
    const self = {
        url: follower.url,
        host: follower.httpHost,
        port: follower.httpPort,
        leaderHost: leader.node.httpHost,
        leaderPort: leader.node.httpPort,
        dataDir: follower.dataDir,
        pid: follower.child.pid,
        cluster,
        leaderId: leader.id,
        followerId: follower.id,
        log: () => cluster.nodes.map((n) => `--- node ${n.id}${n.id === leader.id ? ' (leader)' : ''}` +
                                            `${n === follower ? ' (the follower the tests talk to)' : ''}\n${n.log()}`)
            .join('\n'),
        alive: () => cluster.nodes.every((n) => n.alive()),
        async stop() {
            if (stopped) return;
            stopped = true;
            // Whether the file really went through a follower: said, not failed
            // (an election on a loaded machine is no fault of the tests).
            try {
                const now = await cluster.leaderOf(0, { timeoutMs: 2000 });
                if (now.id === follower.id) {
                    console.error(`cluster mode: node ${follower.id}, the follower the tests talked to, ` +
                                  `became the leader (term ${now.term}) during the file`);
                }
            } catch { /* no agreed leader: nothing to say */ }
            await cluster.stop();
        },
        signal() { throw notOnClusterError('signal()'); },
        async waitExit() { throw notOnClusterError('waitExit()'); },
        async restart() { throw notOnClusterError('restart()'); },
        async crashAndRestart() {
            stopped = true;
            await Promise.all(cluster.nodes.map((n) => n.kill9()));
            await Promise.all(cluster.nodes.map((n) => n.restart()));
            await cluster.waitReady();
            return throughFollower(cluster);
        },
    };
    return self;
}

let clusterCount = 0;
async function clusterServer({ extraArgs, memory, dataDir, fileLimit }) {
    if (memory === true) throw notOnClusterError('startServer({memory: true})');
    if (dataDir !== undefined) throw notOnClusterError('startServer({dataDir})');
    if (fileLimit !== undefined) throw notOnClusterError('startServer({fileLimit})');
    const { startCluster } = await clusterLibrary();
    // Each cluster is a deployment of its own, with an id of its own
    // (Ursula-Cluster-Id, ext 10).
    clusterCount += 1;
    const clusterId = `http-${process.pid}-${clusterCount}`;
    const cluster = await startCluster({ nodes: 3, groups: 1, extraArgs, clusterId });
    try {
        await cluster.waitReady();
        return await throughFollower(cluster);
    } catch (e) {
        await cluster.stop();
        throw e;
    }
}
