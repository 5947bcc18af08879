// The client commands of `dstream` (create, append, read, tail, head, close,
// delete, snapshot publish/read, bootstrap, retention) against a started
// server: round trips, outputs, --json, and exit codes (0 done, 1 refused,
// 2 bad arguments, 3 no answer).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serverBinary, startServer } from './lib/server.mjs';
import { uniq } from './lib/http.mjs';
import { within } from './lib/within.mjs';
import { parsePrometheus, total } from './lib/prometheus.mjs';

const bin = serverBinary();
const dir = mkdtempSync(path.join(os.tmpdir(), 'dstream-cli-'));
let srv;
before(async () => { srv = await startServer(); });
after(async () => {
    await srv.stop();
    rmSync(dir, { recursive: true, force: true });
});

// How long a client command may run, and how soon `dstream tail` must exit
// once its stream is closed.
const COMMAND_MS = 30_000;
const TAIL_EXIT_MS = 5000;

// Runs `dstream ARGS` with `input` on stdin; stdout as a Buffer. A command
// that does not exit within COMMAND_MS is killed and fails the test.
function cli(args, { input = '' } = {}) {
    const r = spawnSync(bin, args, { input, timeout: COMMAND_MS, maxBuffer: 64 << 20 });
    if (r.error) {
        const why = r.error.code === 'ETIMEDOUT' ? `did not exit within ${COMMAND_MS} ms` : r.error.message;
        assert.fail(`dstream ${args.join(' ')}: ${why}\n${r.stderr?.toString() ?? ''}`);
    }
    return { code: r.status, stdout: r.stdout, out: r.stdout.toString(), err: r.stderr.toString() };
}

function ok(args, options) {
    const r = cli(args, options);
    assert.equal(r.code, 0, `dstream ${args.join(' ')}: exit ${r.code}\n${r.err}`);
    return r;
}

const v1 = (name) => `${srv.url}/v1/stream/${name}`;
const bucketed = (name) => `${srv.url}/cli-tests/${name}`;
const sha = (b) => createHash('sha256').update(b).digest('hex');

// A running `dstream tail`: its output so far, and its exit (`exited(ms)`
// resolves to the exit code, or fails the test when it has not exited after ms).
function startTail(args) {
    const child = spawn(bin, ['tail', ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
    const state = { out: Buffer.alloc(0), err: '', exit: null };
    child.stdout.on('data', (d) => { state.out = Buffer.concat([state.out, d]); });
    child.stderr.on('data', (d) => { state.err += d; });
    // 'close', not 'exit': the output may still be in the pipe when the process exits.
    const exited = new Promise((resolve) => child.on('close', (code) => { state.exit = code; resolve(code); }));
    return {
        state,
        exited: (ms = TAIL_EXIT_MS) => within(exited, ms, () =>
            `dstream tail to exit after its stream closed; out ${JSON.stringify(state.out.toString())}; err ${state.err}`),
        async waitFor(pred, ms = 5000) {
            const deadline = Date.now() + ms;
            while (!pred(state.out.toString())) {
                if (state.exit !== null || Date.now() > deadline) {
                    assert.fail(`tail: waited for output; exit ${state.exit}; out ${JSON.stringify(state.out.toString())}; err ${state.err}`);
                }
                await new Promise((r) => setTimeout(r, 20));
            }
        },
        kill() { if (state.exit === null) child.kill('SIGTERM'); },
    };
}

test('cli: create, append from stdin and from a file, read back, head', () => {
    const url = v1(uniq('text'));
    const created = ok(['create', url, '--content-type', 'text/plain']);
    assert.match(created.out, /^201 Created\n/);
    assert.match(created.out, /Stream-Next-Offset: 0{20}\n/);
    ok(['append', url], { input: 'hello ' });
    const file = path.join(dir, 'world.txt');
    writeFileSync(file, 'world');
    const appended = ok(['append', url, '--file', file]);
    assert.match(appended.out, /^204 No Content\n/);
    assert.match(appended.out, /Stream-Next-Offset: 0{18}11\n/);
    assert.equal(ok(['read', url]).out, 'hello world');
    assert.equal(ok(['read', url, '--offset', '00000000000000000006']).out, 'world');
    const head = JSON.parse(ok(['head', url, '--json']).out);
    assert.equal(head.status, 200);
    assert.equal(head.headers['content-type'], 'text/plain');
    assert.equal(head.headers['stream-next-offset'], '00000000000000000011');
    assert.match(head.headers['stream-incarnation'], /^\d+$/);
});

test('cli: read follows Stream-Next-Offset across answers until up to date', () => {
    const url = v1(uniq('multi'));
    ok(['create', url, '--content-type', 'text/plain']);
    ok(['append', url], { input: 'abcdefghij' });
    // --max-bytes 3: four answers, each piece reported under --json.
    const pieces = ok(['read', url, '--max-bytes', '3', '--json']).out.trim().split('\n').map((l) => JSON.parse(l));
    assert.deepEqual(pieces.map((p) => p.data), ['abc', 'def', 'ghi', 'j']);
    assert.deepEqual(pieces.map((p) => p.up_to_date), [false, false, false, true]);
    assert.equal(pieces[0].offset, '-1');
    assert.equal(pieces[1].offset, pieces[0].next_offset);
    assert.equal(pieces[3].next_offset, '00000000000000000010');
    assert.equal(ok(['read', url, '--max-bytes', '3']).out, 'abcdefghij');
});

test('cli: read of a stream larger than one answer (the 8 MiB cap) gets every byte', () => {
    const url = v1(uniq('large'));
    ok(['create', url]);
    const body = randomBytes(9 << 20);
    const file = path.join(dir, 'large.bin');
    writeFileSync(file, body);
    ok(['append', url, '--file', file]);
    const pieces = ok(['read', url, '--json']).out.trim().split('\n').map((l) => JSON.parse(l));
    assert.ok(pieces.length >= 2, `${pieces.length} answers`);
    const read = ok(['read', url]);
    assert.equal(read.stdout.length, body.length);
    assert.equal(sha(read.stdout), sha(body));
});

test('cli: JSON streams print one message per line on both surfaces', () => {
    for (const url of [v1(uniq('json')), bucketed(uniq('json'))]) {
        ok(['create', url, '--content-type', 'application/json']);
        ok(['append', url], { input: '[{"a":1},{"b":[1, 2]}]' });
        ok(['append', url], { input: '{"c":"x"}' });
        assert.equal(ok(['read', url]).out, '{"a":1}\n{"b":[1,2]}\n{"c":"x"}\n', url);
    }
});

for (const mode of ['sse', 'long-poll']) {
    test(`cli: tail (${mode}) prints a live append as it arrives and ends when the stream closes`, async () => {
        const url = bucketed(uniq(`tail-${mode}`));
        ok(['create', url, '--content-type', 'application/json']);
        ok(['append', url], { input: '{"before":true}' });
        const tail = startTail([url, '--offset', '-1', ...(mode === 'long-poll' ? ['--long-poll'] : [])]);
        try {
            await tail.waitFor((out) => out.includes('{"before":true}\n'));
            ok(['append', url], { input: '{"live":1}' });
            await tail.waitFor((out) => out.includes('{"live":1}\n'));
            ok(['close', url]);
            assert.equal(await tail.exited(), 0, tail.state.err);
            assert.equal(tail.state.out.toString(), '{"before":true}\n{"live":1}\n');
        } finally {
            tail.kill();
        }
    });
}

test('cli: tail from an offset skips what is below it; binary data arrives intact (base64 over SSE)', async () => {
    const url = v1(uniq('tail-bin'));
    ok(['create', url]);
    ok(['append', url], { input: 'old' });
    const tailOffset = JSON.parse(ok(['head', url, '--json']).out).headers['stream-next-offset'];
    const tail = startTail([url, '--json', '--offset', tailOffset]);
    try {
        const bytes = Buffer.from([0, 1, 0xfe, 0xff, 10, 13]);
        ok(['append', url], { input: bytes });
        ok(['close', url]);
        assert.equal(await tail.exited(), 0, tail.state.err);
        const pieces = tail.state.out.toString().trim().split('\n').map((l) => JSON.parse(l));
        const data = Buffer.concat(pieces.filter((p) => p.data_base64).map((p) => Buffer.from(p.data_base64, 'base64')));
        assert.deepEqual(data, bytes);
        assert.equal(pieces.at(-1).closed, true);
    } finally {
        tail.kill();
    }
});

test('cli: idempotent producer appends report applied, then repeat', () => {
    const url = v1(uniq('producer'));
    ok(['create', url, '--content-type', 'text/plain']);
    const args = ['append', url, '--producer', 'w-1', '--epoch', '0', '--seq', '0', '--json'];
    const first = JSON.parse(ok(args, { input: 'x' }).out);
    assert.equal(first.status, 200);
    assert.equal(first.headers['producer-epoch'], '0');
    const repeat = JSON.parse(ok(args, { input: 'x' }).out);
    assert.equal(repeat.status, 204);
    const gap = cli(['append', url, '--producer', 'w-1', '--epoch', '0', '--seq', '5'], { input: 'y' });
    assert.equal(gap.code, 1);
    assert.match(gap.err, /409 Conflict: PRODUCER_SEQ_CONFLICT: /);
    assert.match(gap.err, /Producer-Expected-Seq: 1/);
    assert.equal(ok(['read', url]).out, 'x');
});

test('cli: error answers name the server\'s code and exit 1; --json prints the error body', () => {
    const missing = v1(uniq('missing'));
    const read = cli(['read', missing]);
    assert.equal(read.code, 1);
    assert.match(read.err, /^dstream: 404 Not Found: STREAM_NOT_FOUND: /);
    assert.equal(read.out, '');
    const json = cli(['read', missing, '--json']);
    assert.equal(json.code, 1);
    const body = JSON.parse(json.out);
    assert.equal(body.status, 404);
    assert.equal(body.error.code, 'STREAM_NOT_FOUND');
    assert.equal(typeof body.error.message, 'string');

    const url = v1(uniq('closed'));
    ok(['create', url, '--content-type', 'text/plain', '--closed']);
    const append = cli(['append', url], { input: 'late' });
    assert.equal(append.code, 1);
    assert.match(append.err, /409 Conflict: STREAM_CLOSED/);
    const conflict = cli(['create', url, '--content-type', 'application/json']);
    assert.equal(conflict.code, 1);
    assert.match(conflict.err, /STREAM_ALREADY_EXISTS_CONFLICT/);
});

test('cli: delete, then the stream is gone (HEAD 404 has no body: the status is reported)', () => {
    const url = v1(uniq('delete'));
    ok(['create', url]);
    assert.match(ok(['delete', url]).out, /^204 No Content/);
    const head = cli(['head', url]);
    assert.equal(head.code, 1);
    assert.match(head.err, /^dstream: 404 Not Found\n/);
});

test('cli: no server exits 3; bad arguments exit 2', async () => {
    const port = srv.port;
    const down = cli(['head', `http://127.0.0.1:1/v1/stream/x`]);
    assert.equal(down.code, 3);
    assert.match(down.err, /^dstream: no answer: /);
    assert.equal(JSON.parse(cli(['head', 'http://127.0.0.1:1/x', '--json']).out).status, 0);
    assert.equal(cli(['read']).code, 2);
    assert.equal(cli(['read', `ftp://127.0.0.1:${port}/x`]).code, 2);
    assert.equal(cli(['append', v1('x'), '--producer', 'p']).code, 2);
    assert.equal(cli(['snapshot', 'publish', v1('x')]).code, 2);
    assert.equal(cli(['append', v1('x'), '--file', path.join(dir, 'no-such-file')]).code, 1);
});

test('cli: snapshot publish and read, bootstrap, retention', () => {
    const url = bucketed(uniq('doc'));
    ok(['create', url, '--content-type', 'application/json']);
    ok(['append', url], { input: '[{"op":1},{"op":2},{"op":3}]' });
    const at = '00000000000000000009';
    const published = ok(['snapshot', 'publish', url, at, '--json'], { input: 'STATE-1' });
    const digest = JSON.parse(published.out).headers['stream-snapshot-digest'];
    assert.match(digest, /^[0-9a-f]{64}$/);
    assert.equal(ok(['snapshot', 'read', url, at]).out, 'STATE-1');
    const output = path.join(dir, 'snapshot.out');
    ok(['snapshot', 'read', url, at, '--output', output, '--range', '0-4']);
    assert.equal(readFileSync(output, 'utf8'), 'STATE');

    const boot = JSON.parse(ok(['bootstrap', url, '--json']).out);
    assert.equal(boot.headers['stream-snapshot-offset'], at);
    assert.deepEqual(boot.parts.map((p) => p.data ?? Buffer.from(p.data_base64, 'base64').toString()),
                     ['STATE-1', '{"op":2}\n', '{"op":3}\n']);
    assert.equal(ok(['bootstrap', url]).out, 'STATE-1{"op":2}\n{"op":3}\n');

    assert.match(ok(['retention', url, at]).out, /Stream-Retained-Offset: 0{19}9/);
    const gone = cli(['read', url]);
    assert.equal(gone.code, 1);
    assert.match(gone.err, /410 Gone: STREAM_GONE/);
    assert.equal(ok(['read', url, '--offset', at]).out, '{"op":2}\n{"op":3}\n');
});

test('cli: snapshot publish of a body larger than --part-bytes uploads in parts (ext 2.2)', async () => {
    const durable = await startServer({ memory: false });
    try {
        const url = `${durable.url}/cli-tests/${uniq('parts')}`;
        ok(['create', url]);
        ok(['append', url], { input: 'abc' });
        const body = randomBytes(5000);
        const file = path.join(dir, 'parts.bin');
        writeFileSync(file, body);
        const r = cli(['snapshot', 'publish', url, '00000000000000000003', '--file', file, '--part-bytes', '1024',
                       '--content-type', 'application/x-test']);
        assert.equal(r.code, 0, r.err);
        // Five parts of at most 1024 bytes staged (201 each), one commit (204):
        // no single upload of the whole body.
        const metrics = parsePrometheus(await (await fetch(`${durable.url}/__ursula/metrics`)).text());
        const snapshotAnswers = (status) => total(metrics, 'dstream_http_requests_total', { route: 'snapshot', status });
        assert.equal(snapshotAnswers('201'), 5, 'each part staged on its own');
        assert.equal(snapshotAnswers('204'), 1, 'one commit of the parts');
        const read = ok(['snapshot', 'read', url, '00000000000000000003', '--json']);
        const answer = JSON.parse(read.out);
        assert.equal(answer.headers['content-type'], 'application/x-test');
        assert.equal(sha(Buffer.from(answer.data_base64, 'base64')), sha(body));
    } finally {
        await durable.stop();
    }
});

test('cli: --help of dstream lists every command; each command\'s help names its options', () => {
    const top = ok(['--help']).out;
    for (const name of ['serve', 'config', 'create', 'append', 'read', 'tail', 'head', 'close', 'delete',
                        'snapshot', 'bootstrap', 'retention', 'backup', 'restore', 'accept-loss']) {
        assert.match(top, new RegExp(`^  ${name} `, 'm'), name);
    }
    const expected = {
        create: ['--content-type', '--ttl', '--expires-at', '--closed', '--file', '--forked-from', '--json', '--header'],
        append: ['--file', '--content-type', '--producer', '--epoch', '--seq', '--stream-seq', '--close'],
        read: ['--offset', '--max-bytes', '--json'],
        tail: ['--offset', '--long-poll', '--json'],
        head: ['--json'],
        close: ['--producer'],
        delete: ['--header'],
        retention: ['OFFSET'],
        bootstrap: ['--json'],
        'snapshot publish': ['OFFSET', '--file', '--content-type', '--part-bytes'],
        'snapshot read': ['OFFSET', '--output', '--range'],
        'config print': ['--preset', '--config', '--hot-bytes', '--access-log', '--staged-part-grace-seconds'],
        serve: ['--listen', '--data-dir', '--memory', '--preset', '--config', '--shutdown-timeout-seconds',
                '--admin-listen', '--admin-token-file'],
        'backup create': ['ADMIN_URL', '--to', '--admin-token-file', '--json'],
        'backup verify': ['LOCATION', '--s3-endpoint', '--s3-region', '--json'],
        restore: ['ADMIN_URL', '--from', '--admin-token-file', '--json'],
        'accept-loss': ['ADMIN_URL', '--group', '--admin-token-file', '--json'],
    };
    for (const [command, options] of Object.entries(expected)) {
        const help = ok([...command.split(' '), '--help']).out;
        assert.match(help, /^Usage: /m, command);
        for (const option of options) assert.ok(help.includes(option), `${command} --help lacks ${option}`);
    }
});
