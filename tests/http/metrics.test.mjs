// Operability: Prometheus metrics at /__ursula/metrics and the access log
// (issue "Operability"; docs/metrics.md lists every metric).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, suiteOverH2, suiteOverTls } from './lib/server.mjs';
import { uniq, openSse, sleep } from './lib/http.mjs';
import { parsePrometheus, value, total } from './lib/prometheus.mjs';
import { coldStoreOfSuite } from './lib/files.mjs';

let srv;
before(async () => { srv = await startServer({ memory: false }); });
after(async () => { await srv?.stop(); });

async function scrape(server = srv) {
    const res = await fetch(`${server.url}/__ursula/metrics`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'text/plain; version=0.0.4; charset=utf-8');
    assert.equal(res.headers.get('cache-control'), 'no-store');
    return parsePrometheus(await res.text());
}

// Scrapes until `pred(metrics)` holds (gauges follow events on other threads).
async function scrapeUntil(pred, what, ms = 5000) {
    const deadline = Date.now() + ms;
    let m;
    while (Date.now() < deadline) {
        m = await scrape();
        if (await pred(m)) return m;
        await sleep(25);
    }
    assert.fail(`metrics never showed ${what}`);
}

async function makeStream(contentType = 'application/octet-stream') {
    const url = `${srv.url}/metrics-bkt/${uniq('m')}`;
    const res = await fetch(url, { method: 'PUT', headers: { 'content-type': contentType } });
    assert.equal(res.status, 201);
    return url;
}

const requests = (m, route, status) => value(m, 'dstream_http_requests_total', { route, status: String(status) }) ?? 0;

test('metrics: the scrape is strict Prometheus text 0.0.4 with every family of a durable node', async () => {
    const m = await scrape();
    for (const [name, type] of [
        ['dstream_build_info', 'gauge'],
        ['dstream_http_requests_total', 'counter'],
        ['dstream_http_request_duration_seconds', 'histogram'],
        ['dstream_http_requests_in_flight', 'gauge'],
        ['dstream_http_connections', 'gauge'],
        ['dstream_live_readers', 'gauge'],
        ['dstream_live_delivery_seconds', 'histogram'],
        ['dstream_live_readers_behind_total', 'counter'],
        ['dstream_appends_total', 'counter'],
        ['dstream_appended_bytes_total', 'counter'],
        ['dstream_streams', 'gauge'],
        ['dstream_hot_bytes', 'gauge'],
        ['dstream_checkpoints_written_total', 'counter'],
        ['dstream_checkpoint_errors_total', 'counter'],
        ['dstream_cold_flush_failures_total', 'counter'],
        ['dstream_cold_backpressure_refusals_total', 'counter'],
        ['dstream_groups_cold_failing', 'gauge'],
        ['dstream_wal_fsync_duration_seconds', 'histogram'],
        ['dstream_wal_batch_records', 'histogram'],
        ['dstream_wal_batch_bytes', 'histogram'],
        ['dstream_wal_write_errors_total', 'counter'],
        ['dstream_wal_bytes', 'gauge'],
        ['dstream_wal_segments', 'gauge'],
        ['dstream_chunk_cache_hits_total', 'counter'],
        ['dstream_chunk_cache_misses_total', 'counter'],
        ['dstream_chunk_cache_bytes', 'gauge'],
        ['dstream_object_store_operations_total', 'counter'],
        ['dstream_object_store_operation_duration_seconds', 'histogram'],
        ['dstream_object_store_bytes_total', 'counter'],
        ['dstream_object_store_retries_total', 'counter'],
        ['dstream_recovery_duration_seconds', 'gauge'],
        ['dstream_recovery_checkpoints_loaded', 'gauge'],
        ['dstream_recovery_records_replayed', 'gauge'],
        ['dstream_recovery_bytes_replayed', 'gauge'],
    ]) {
        const family = m.families.get(name);
        assert.ok(family, `family ${name} is missing`);
        assert.equal(family.type, type, name);
        assert.ok(family.help && family.help.length > 10, `${name} has a HELP text`);
    }
    assert.equal(value(m, 'dstream_build_info', { version: '0.1.0' }), 1);
    assert.ok(value(m, 'dstream_wal_segments') >= 1);
    assert.ok(value(m, 'dstream_wal_bytes') > 0);
    // The start swept the cold store: two listings that succeeded.
    assert.ok(value(m, 'dstream_object_store_operations_total', { op: 'list', result: 'ok' }) >= 2);
});

test('metrics: HEAD answers the headers only; other methods are 404 (an operator route is no bucket)', async () => {
    const head = await fetch(`${srv.url}/__ursula/metrics`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(await head.text(), '');
    for (const method of ['POST', 'PUT', 'DELETE']) {
        const res = await fetch(`${srv.url}/__ursula/metrics`, { method, body: method === 'DELETE' ? undefined : 'x' });
        assert.equal(res.status, 404, method);
        assert.equal((await res.json()).error.code, 'NOT_FOUND');
    }
});

test('metrics: appends, bytes, streams and requests by route and status move with traffic', async () => {
    const before = await scrape();
    const url = await makeStream();
    const bodies = ['a', 'bb', 'ccc', 'dddd', 'x'.repeat(1000)];
    for (const body of bodies) {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body });
        assert.equal(res.status, 204);
    }
    const missing = await fetch(`${srv.url}/metrics-bkt/${uniq('absent')}?offset=-1`);
    assert.equal(missing.status, 404);
    await missing.arrayBuffer();
    const read = await fetch(`${url}?offset=-1`);
    assert.equal(read.status, 200);
    await read.arrayBuffer();
    const after = await scrape();

    const bytes = bodies.reduce((n, b) => n + b.length, 0);
    assert.equal(value(after, 'dstream_appends_total') - value(before, 'dstream_appends_total'), bodies.length);
    assert.equal(value(after, 'dstream_appended_bytes_total') - value(before, 'dstream_appended_bytes_total'), bytes);
    assert.equal(value(after, 'dstream_streams') - value(before, 'dstream_streams'), 1);
    assert.ok(value(after, 'dstream_hot_bytes') - value(before, 'dstream_hot_bytes') >= bytes);
    assert.equal(requests(after, 'create', 201) - requests(before, 'create', 201), 1);
    assert.equal(requests(after, 'append', 204) - requests(before, 'append', 204), bodies.length);
    assert.equal(requests(after, 'read', 404) - requests(before, 'read', 404), 1);
    assert.equal(requests(after, 'read', 200) - requests(before, 'read', 200), 1);
    const appendCount = (m) => value(m, 'dstream_http_request_duration_seconds_count', { route: 'append' }) ?? 0;
    assert.equal(appendCount(after) - appendCount(before), bodies.length);
    // The scrape itself is counted: the one before shows in the one after.
    assert.ok(requests(after, 'operator', 200) > requests(before, 'operator', 200));
    // Counted under the protocol the suite speaks, so that a run over HTTPS
    // or HTTP/2 shows it did.
    const byProtocol = (m) => value(m, 'dstream_http_protocol_requests_total',
                                    { version: suiteOverH2 ? '2' : '1.1', tls: String(suiteOverTls) }) ?? 0;
    assert.ok(byProtocol(after) - byProtocol(before) >= bodies.length + 3,
              `requests over HTTP/${suiteOverH2 ? '2' : '1.1'} (tls ${suiteOverTls}): ${byProtocol(after) - byProtocol(before)}`);

    const del = await fetch(url, { method: 'DELETE' });
    assert.equal(del.status, 204);
    const gone = await scrape();
    assert.equal(value(gone, 'dstream_streams'), value(before, 'dstream_streams'));
});

test('metrics: a durable append moves the WAL fsync and group-commit histograms', async () => {
    const before = await scrape();
    const url = await makeStream();
    await Promise.all(Array.from({ length: 8 }, (_, i) =>
        fetch(url, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: `w${i}` })
            .then((r) => assert.equal(r.status, 204))));
    const after = await scrape();
    const delta = (name) => value(after, name) - value(before, name);
    assert.ok(delta('dstream_wal_fsync_duration_seconds_count') >= 1);
    assert.ok(delta('dstream_wal_fsync_duration_seconds_sum') > 0);
    // Every record was in some batch: the create and the eight appends.
    assert.ok(delta('dstream_wal_batch_records_sum') >= 9, `records ${delta('dstream_wal_batch_records_sum')}`);
    // Flushes overlap (the WAL keeps several in flight) and each covers at
    // least one batch written since the last began: never more flushes than batches.
    assert.ok(delta('dstream_wal_fsync_duration_seconds_count') <= delta('dstream_wal_batch_records_count'),
              `fsyncs ${delta('dstream_wal_fsync_duration_seconds_count')}, batches ${delta('dstream_wal_batch_records_count')}`);
    assert.ok(delta('dstream_wal_batch_bytes_sum') > 8 * 2);
    // A node's first segment grows as it is written (only later ones are prepared).
    assert.ok(delta('dstream_wal_bytes') >= delta('dstream_wal_batch_bytes_sum'));
});

test('metrics: the live reader gauges count an open SSE reader and a waiting long-poll', async () => {
    const url = await makeStream('text/plain');
    const base = await scrape();
    const sseBase = value(base, 'dstream_live_readers', { mode: 'sse' });
    const pollBase = value(base, 'dstream_live_readers', { mode: 'long_poll' });

    const sse = await openSse(`${url}?offset=now&live=sse`);
    assert.equal(sse.res.status, 200);
    await scrapeUntil((m) => value(m, 'dstream_live_readers', { mode: 'sse' }) === sseBase + 1, 'the SSE reader');
    await scrapeUntil((m) => value(m, 'dstream_http_requests_in_flight', { route: 'sse' }) >= 1, 'SSE in flight');
    sse.controller.abort();

    const poll = fetch(`${url}?offset=now&live=long-poll&timeout_ms=10000`);
    await scrapeUntil((m) => value(m, 'dstream_live_readers', { mode: 'long_poll' }) === pollBase + 1,
                      'the long-poll');
    const append = async (body) => {
        const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body });
        assert.equal(res.status, 204);
    };
    await append('wake');
    const answered = await poll;
    assert.equal(answered.status, 200);
    assert.equal(await answered.text(), 'wake');
    await scrapeUntil((m) => value(m, 'dstream_live_readers', { mode: 'long_poll' }) === pollBase,
                      'the long-poll answered');
    // An SSE reader that left is noticed when its next events cannot be sent
    // (the first write after the peer closed may still succeed).
    await scrapeUntil(async (m) => {
        if (value(m, 'dstream_live_readers', { mode: 'sse' }) === sseBase) return true;
        await append('more');
        return false;
    }, 'the SSE reader gone');
});

test('metrics: chunk flushes, cold reads and checkpoints move the storage counters', async () => {
    const cold = await startServer({
        memory: false,
        extraArgs: ['--hot-bytes', '1048576', '--checkpoint-bytes', '65536', '--chunk-cache-bytes', '16777216'],
    });
    try {
        const url = `${cold.url}/cold-bkt/${uniq('c')}`;
        assert.equal((await fetch(url, { method: 'PUT', headers: { 'content-type': 'application/octet-stream' } })).status, 201);
        const mib = Buffer.alloc(1 << 20, 'z');
        for (let i = 0; i < 5; i++) {
            const r = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/octet-stream' }, body: mib });
            assert.equal(r.status, 204);
        }
        const scrapeCold = async () => parsePrometheus(await (await fetch(`${cold.url}/__ursula/metrics`)).text());
        const deadline = Date.now() + 10_000;
        let m = await scrapeCold();
        // Past the 1 MiB hot budget at least 4 of the 5 MiB go to the store.
        while (value(m, 'dstream_object_store_bytes_total', { op: 'put' }) < 4 << 20 ||
               value(m, 'dstream_checkpoints_written_total') < 1) {
            assert.ok(Date.now() < deadline, 'no 4 MiB flushed or no checkpoint written within 10 s');
            await sleep(50);
            m = await scrapeCold();
        }
        // A catch-up read sends cold bytes from the chunk's file (a local
        // store; S3 keeps no files here).
        // S3 keeps no chunk files here, and TLS frames every byte in the process.
        const fromFiles = coldStoreOfSuite() || suiteOverTls ? 0 : 65536;
        const plain = await fetch(`${url}?offset=-1&max_bytes=65536`);
        assert.equal(plain.status, 200);
        assert.deepEqual(Buffer.from(await plain.arrayBuffer()), mib.subarray(0, 65536));
        m = await scrapeCold();
        assert.equal(value(m, 'dstream_read_bytes_sent_from_files_total'), fromFiles);
        // A long-poll that finds bytes answers from memory, through the chunk cache.
        for (let i = 0; i < 2; i++) {
            const r = await fetch(`${url}?offset=-1&max_bytes=65536&live=long-poll`);
            assert.equal(r.status, 200);
            assert.deepEqual(Buffer.from(await r.arrayBuffer()), mib.subarray(0, 65536));
        }
        m = await scrapeCold();
        assert.equal(value(m, 'dstream_read_bytes_sent_from_files_total'), fromFiles);
        assert.ok(value(m, 'dstream_chunk_cache_misses_total') >= 1);
        assert.ok(value(m, 'dstream_chunk_cache_hits_total') >= 1);
        assert.ok(value(m, 'dstream_chunk_cache_bytes') > 0);
        assert.ok(value(m, 'dstream_object_store_operations_total', { op: 'get', result: 'ok' }) >= 1);
        // The long-poll loaded the chunk holding its bytes whole; the store
        // (a local directory, or s3rver on loopback) needed no retry.
        assert.ok(value(m, 'dstream_object_store_bytes_total', { op: 'get' }) >= 65536);
        assert.equal(total(m, 'dstream_object_store_retries_total', {}), 0);
        assert.equal(value(m, 'dstream_object_store_operation_duration_seconds_count', { op: 'put' }),
                     total(m, 'dstream_object_store_operations_total', { op: 'put' }));
        assert.ok(value(m, 'dstream_hot_bytes') < 5 << 20, 'flushed bytes left the hot tier');
    } finally {
        await cold.stop();
    }
});

test('metrics: the recovery gauges describe the last start', async () => {
    let node = await startServer({ memory: false });
    try {
        const url = `${node.url}/rec-bkt/${uniq('r')}`;
        assert.equal((await fetch(url, { method: 'PUT', headers: { 'content-type': 'text/plain' } })).status, 201);
        for (let i = 0; i < 5; i++) {
            assert.equal((await fetch(url, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `r${i}` })).status, 204);
        }
        node.signal('SIGTERM');
        assert.equal((await node.waitExit())?.code, 0);
        node = await node.restart();
        const m = parsePrometheus(await (await fetch(`${node.url}/__ursula/metrics`)).text());
        // The records are in the WAL or in the checkpoints the idle sweep wrote.
        assert.ok(value(m, 'dstream_recovery_records_replayed') + value(m, 'dstream_recovery_checkpoints_loaded') > 0);
        assert.ok(value(m, 'dstream_recovery_duration_seconds') >= 0);
        assert.ok(value(m, 'dstream_recovery_bytes_replayed') >= 0);
    } finally {
        await node.stop();
    }
});

test('metrics: a memory node serves the scrape without WAL or cold-tier families', async () => {
    const mem = await startServer({ memory: true });
    try {
        const m = parsePrometheus(await (await fetch(`${mem.url}/__ursula/metrics`)).text());
        assert.ok(m.families.has('dstream_http_requests_total'));
        assert.ok(m.families.has('dstream_appends_total'));
        const cold = /^dstream_(wal|object_store|chunk_cache)_/;
        assert.deepEqual([...m.families.keys()].filter((n) => cold.test(n)), []);
    } finally {
        await mem.stop();
    }
});

test('access log: off by default; --access-log writes one line per request', async () => {
    const quiet = await startServer();
    const logged = await startServer({ extraArgs: ['--access-log'] });
    try {
        for (const s of [quiet, logged]) {
            const r = await fetch(`${s.url}/__ursula/health?probe=${s.port}`);
            assert.equal(r.status, 200);
            await r.arrayBuffer();
            const missing = await fetch(`${s.url}/log-bkt/absent-${s.port}?offset=-1`);
            assert.equal(missing.status, 404);
            await missing.arrayBuffer();
        }
        await sleep(100);
        assert.doesNotMatch(quiet.log(), /method=GET/);
        const lines = logged.log().split('\n').filter((l) => l.includes('[access]'));
        const health = lines.find((l) => l.includes(`target=/__ursula/health?probe=${logged.port}`));
        assert.ok(health, `no access line for the health probe in:\n${logged.log()}`);
        assert.match(health, /method=GET .* status=200 bytes=\d+ duration_us=\d+ remote=127\.0\.0\.1:\d+/);
        const miss = lines.find((l) => l.includes(`absent-${logged.port}`));
        assert.match(miss ?? '', /status=404 bytes=\d+/);
    } finally {
        await quiet.stop();
        await logged.stop();
    }
});

test('metrics: every group reports its Raft log (dstream_raft_*), a sole voter leading with nothing unapplied', async () => {
    const node = await startServer({ memory: false, extraArgs: ['--groups', '4'] });
    try {
        const url = `${node.url}/raft-metrics/${uniq()}`;
        assert.equal((await fetch(url, { method: 'PUT', headers: { 'Content-Type': 'text/plain' } })).status, 201);
        for (let i = 0; i < 5; i += 1) {
            assert.equal((await fetch(url, { method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: 'x' })).status, 204);
        }
        // A group updates its gauges once the call into its log returns: the
        // answer to the last append may leave before that, so the scrape waits.
        const scrape = async () => parsePrometheus(await (await fetch(`${node.url}/__ursula/metrics`)).text());
        const settled = (s) => ['0', '1', '2', '3'].every((g) =>
            value(s, 'dstream_raft_last_index', { group: g }) === value(s, 'dstream_raft_commit_index', { group: g }) &&
            value(s, 'dstream_raft_applied_index', { group: g }) === value(s, 'dstream_raft_commit_index', { group: g }));
        let m = await scrape();
        for (let i = 0; i < 50 && !settled(m); i += 1) {
            await new Promise((r) => setTimeout(r, 20));
            m = await scrape();
        }
        for (const g of ['0', '1', '2', '3']) {
            assert.equal(value(m, 'dstream_raft_role', { group: g }), 2, `group ${g} leads`);
            assert.equal(value(m, 'dstream_raft_leader', { group: g }), 1);
            assert.ok(value(m, 'dstream_raft_term', { group: g }) >= 1);
            const commit = value(m, 'dstream_raft_commit_index', { group: g });
            assert.ok(commit >= 2, 'the configuration and init_group at least');
            assert.equal(value(m, 'dstream_raft_applied_index', { group: g }), commit);
            assert.equal(value(m, 'dstream_raft_last_index', { group: g }), commit);
            assert.equal(value(m, 'dstream_raft_log_bytes_in_memory', { group: g }), 0);
        }
        // The stream's group took the create and the five appends.
        const commits = ['0', '1', '2', '3'].map((g) => value(m, 'dstream_raft_commit_index', { group: g }));
        assert.ok(Math.max(...commits) >= 8, `commit indexes ${commits}`);
    } finally {
        await node.stop();
    }
});
