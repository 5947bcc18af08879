// Every dstream-bench scenario, briefly, against one `dstream serve --memory`
// (and fanout against the SSE floor, bench/load/fanout_floor.cc, too): each
// must exit 0 and print one JSON line whose counts add up. The rates are
// low enough for any machine, so nothing may be missed, duplicated or
// corrupted; the figures themselves are not checked.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFile, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import net from 'node:net';
import { promisify } from 'node:util';
import { startServer } from '../http/lib/server.mjs';

const run = promisify(execFile);

function binary(variable, target) {
    const bin = process.env[variable];
    if (!bin || !existsSync(bin)) {
        throw new Error(`${variable}=${bin} does not exist: point it at build/${target}`);
    }
    return bin;
}

let srv;
before(async () => { srv = await startServer(); });
after(async () => { await srv?.stop(); });

// Runs one scenario against `server` (the dstream node unless named);
// returns its JSON line.
async function benchAgainst(server, scenario, ...args) {
    const argv = [scenario, '--url', server.url, '--server-pid', String(server.pid), ...args];
    let out;
    try {
        out = await run(binary('DSTREAM_BENCH_BIN', 'dstream-bench'), argv, { timeout: 30_000 });
    } catch (err) {
        assert.fail(`dstream-bench ${argv.join(' ')} failed (${err.code}):\n${err.stdout}\n${err.stderr}`);
    }
    const lines = out.stdout.trim().split('\n');
    assert.equal(lines.length, 1, `one line on stdout:\n${out.stdout}`);
    const j = JSON.parse(lines[0]);
    assert.equal(j.scenario, scenario);
    assert.ok(j.server_cpu_s >= 0 && j.server_rss_peak_kib > 0, 'the server was sampled');
    assert.ok(j.client_cpu_s >= 0, 'the generator measured itself');
    return j;
}

const bench = (scenario, ...args) => benchAgainst(srv, scenario, ...args);

async function freePort() {
    const probe = net.createServer();
    await new Promise((resolve) => probe.listen(0, '127.0.0.1', resolve));
    const { port } = probe.address();
    await new Promise((resolve) => probe.close(resolve));
    return port;
}

// fanout-floor on a free port, once it accepts connections.
async function startFanoutFloor() {
    const port = await freePort();
    const child = spawn(binary('FANOUT_FLOOR_BIN', 'fanout-floor'), ['--listen', `127.0.0.1:${port}`],
                        { stdio: ['ignore', 'ignore', 'inherit'] });
    for (let tries = 0; ; ++tries) {
        const up = await new Promise((resolve) => {
            const s = net.connect(port, '127.0.0.1', () => { s.destroy(); resolve(true); });
            s.on('error', () => resolve(false));
        });
        if (up) break;
        if (tries > 100 || child.exitCode !== null) throw new Error('fanout-floor did not start');
        await new Promise((resolve) => setTimeout(resolve, 20));
    }
    return {
        url: `http://127.0.0.1:${port}`,
        pid: child.pid,
        stop: async () => {
            child.kill('SIGTERM');
            if (child.exitCode === null) await new Promise((resolve) => child.once('exit', resolve));
        },
    };
}

function assertLatency(l) {
    assert.ok(l.p50 > 0 && l.p50 <= l.p90 && l.p90 <= l.p99 && l.p99 <= l.p999 && l.p999 <= l.max,
              `ordered percentiles: ${JSON.stringify(l)}`);
}

// Every acknowledged message reached every reader, once.
function assertDelivered(j, readersPerMessage) {
    assert.equal(j.write_errors + j.write_transport_errors + j.writes_unanswered, 0);
    assert.equal(j.messages_acked, j.messages_sent);
    assert.ok(j.messages_in_window > 0);
    assert.equal(j.deliveries, j.messages_in_window * readersPerMessage);
    assert.equal(j.deliveries_total, j.messages_sent * readersPerMessage);
    assert.equal(j.missed, 0);
    assert.equal(j.duplicates, 0);
    assert.equal(j.malformed, 0);
    assert.equal(j.read_errors, 0);
    assert.equal(j.readers_gave_up, 0);
    assert.equal(j.drained, true);
    assertLatency(j.latency_us);
}

test('append: appends answered 2xx, none failed', async () => {
    const j = await bench('append', '--streams', '8', '--connections', '4', '--body-bytes', '100',
                          '--warmup', '0.2', '--duration', '1');
    assert.ok(j.appends > 0);
    assert.equal(j.errors_total + j.transport_errors_total, 0);
    assertLatency(j.latency_us);
});

test('fanout: 10 SSE subscribers of a JSON stream on the v1 surface get every message once', async () => {
    const j = await bench('fanout', '--subscribers', '10', '--rate', '40', '--surface', 'v1',
                          '--content-type', 'application/json', '--warmup', '0.2', '--duration', '1');
    assertDelivered(j, 10);
});

test('fanout-floor: the SSE floor gets the fanout generator every message once, as dstream does', async () => {
    const floor = await startFanoutFloor();
    try {
        const j = await benchAgainst(floor, 'fanout', '--subscribers', '10', '--rate', '40',
                                     '--warmup', '0.2', '--duration', '1');
        assertDelivered(j, 10);
    } finally {
        await floor.stop();
    }
});

test('longpoll: 5 streams with a long-poll reader each get every message once', async () => {
    const j = await bench('longpoll', '--streams', '5', '--rate', '20', '--warmup', '0.2',
                          '--duration', '1');
    assertDelivered(j, 1);
    assert.ok(j.polls_with_data > 0);
});

test('catchup: 2 readers read an 8 MiB stream twice, every byte as written', async () => {
    const bytes = 8 * 1024 * 1024;
    const j = await bench('catchup', '--stream-bytes', String(bytes), '--append-bytes', '1048576',
                          '--readers', '2', '--repeat', '2');
    assert.equal(j.mismatches, 0);
    assert.equal(j.incomplete_reads, 0);
    assert.equal(j.errors, 0);
    assert.equal(j.bytes_read, 2 * 2 * bytes);
    assert.equal(j.round_mb_per_s.length, 2);
    assert.ok(j.aggregate_mb_per_s > 0);
    assertLatency(j.ttfb_us);
});

test('bootstrap: 5 clients each get a multipart answer holding the snapshot', async () => {
    const j = await bench('bootstrap', '--streams', '5', '--snapshot-bytes', '65536',
                          '--tail-messages', '10', '--body-bytes', '100');
    assert.equal(j.bootstraps, 5);
    assert.equal(j.malformed, 0);
    assert.equal(j.errors, 0);
    assert.ok(j.bytes_read >= 5 * (65536 + 10 * 100));
    assertLatency(j.latency_us);
});

test('cpu-speed: a time per step for every CPU the process may use', async () => {
    const out = await run(binary('DSTREAM_BENCH_BIN', 'dstream-bench'),
                          ['cpu-speed', '--repeat', '1', '--steps', '100000'], { timeout: 30_000 });
    const j = JSON.parse(out.stdout.trim());
    assert.equal(j.scenario, 'cpu_speed');
    const allowed = (await run('nproc')).stdout.trim();
    assert.equal(j.cpus.length, Number(allowed));
    for (const c of j.cpus) {
        assert.ok(c.chase_ns_per_step > 0 && c.store_ns_per_step > 0, JSON.stringify(c));
    }
    assert.ok(j.chase_slowest_over_fastest >= 1 && j.store_slowest_over_fastest >= 1);
});
