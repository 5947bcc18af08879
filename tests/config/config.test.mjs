// The settings of `dstream serve` (docs/configuration.md), black-box against
// the binary: checks at start (exit 2, the setting and its bound named),
// precedence flag > env > file > preset > default, `dstream config print`,
// presets, and a served node that takes its settings from a file.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { serverBinary, startServer } from '../http/lib/server.mjs';

const bin = serverBinary();
const dir = mkdtempSync(path.join(os.tmpdir(), 'dstream-config-'));
process.on('exit', () => rmSync(dir, { recursive: true, force: true }));

// The environment of the test runner without any DSTREAM_* setting, plus `env`.
function environment(env = {}) {
    const clean = Object.fromEntries(Object.entries(process.env).filter(([k]) => !k.startsWith('DSTREAM_')));
    return { ...clean, ...env };
}

// Runs `dstream ARGS`; a command that does not exit within 20 s is killed and
// fails the test, saying so.
function run(args, env = {}) {
    const r = spawnSync(bin, args, { env: environment(env), encoding: 'utf8', timeout: 20_000 });
    if (r.error) {
        const why = r.error.code === 'ETIMEDOUT' ? 'did not exit within 20 s' : r.error.message;
        assert.fail(`dstream ${args.join(' ')}: ${why}\n${r.stderr ?? ''}`);
    }
    return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

let files = 0;
function configFile(text) {
    files += 1;
    const file = path.join(dir, `config-${files}.toml`);
    writeFileSync(file, text);
    return file;
}

// `config print` as {key: {value, source}}.
function effective(args, env) {
    const r = run(['config', 'print', ...args], env);
    assert.equal(r.code, 0, r.stderr);
    const out = {};
    for (const line of r.stdout.split('\n')) {
        const m = /^(\w+) = (.*?)\s+# (.*)$/.exec(line);
        if (m) out[m[1]] = { value: m[2], source: m[3] };
    }
    return out;
}

test('config print: every setting with its default and where it came from', () => {
    const e = effective([]);
    assert.deepEqual(Object.keys(e), [
        'listen', 'admin_listen', 'admin_token_file', 'tls_cert', 'tls_key', 'admin_tls_cert',
        'admin_tls_key', 'data_dir', 'memory', 'threads', 'groups', 'log_level', 'hot_bytes',
        'chunk_cache_bytes', 'checkpoint_bytes', 'wal_segment_bytes', 'wal_sync_threads',
        'wal_preallocate', 'access_log', 'shutdown_timeout_seconds', 'staged_part_grace_seconds',
        'cold_orphan_grace_seconds', 'cold_store', 's3_endpoint', 's3_region', 's3_connect_timeout_ms',
        's3_request_timeout_ms', 'ingress_body_bytes', 'max_live_reads', 'max_live_reads_per_stream',
        'client_read_bytes_per_second', 'idle_timeout', 'cluster', 'node_id', 'raft_election_ms',
        'raft_heartbeat_ms', 'raft_trailing_entries', 'body_timeout',
    ]);
    assert.deepEqual(e.hot_bytes, { value: '268435456', source: 'default, 256 MiB' });
    assert.deepEqual(e.listen, { value: "'127.0.0.1:4437'", source: 'default' });
    assert.deepEqual(e.admin_listen, { value: "'127.0.0.1:4438'", source: 'default' });
    assert.deepEqual(e.access_log, { value: 'false', source: 'default' });
    assert.deepEqual(e.shutdown_timeout_seconds, { value: '10', source: 'default, 10 s' });
    assert.deepEqual(e.staged_part_grace_seconds, { value: '86400', source: 'default, 1 day' });
});

test('config precedence: flag > env > file > preset > default', () => {
    const file = configFile('threads = 3\nhot_bytes = "64 MiB"\n');
    const env = { DSTREAM_THREADS: '5' };
    assert.deepEqual(effective(['--config', file, '--threads', '7', '--preset', 'large'], env).threads,
                     { value: '7', source: 'flag' });
    assert.deepEqual(effective(['--config', file, '--preset', 'large'], env).threads, { value: '5', source: 'env' });
    assert.deepEqual(effective(['--config', file, '--preset', 'large']).threads, { value: '3', source: 'file' });
    assert.deepEqual(effective(['--preset', 'large']).threads, { value: '8', source: 'preset large' });
    assert.deepEqual(effective([]).threads, { value: '2', source: 'default' });
    assert.deepEqual(effective(['--config', file]).hot_bytes, { value: '67108864', source: 'file, 64 MiB' });
    // The config file itself may come from the environment.
    assert.deepEqual(effective([], { DSTREAM_CONFIG: file }).threads, { value: '3', source: 'file' });
});

test('config presets: documented sizes; any explicit setting wins; the preset may come from env or file', () => {
    const small = effective(['--preset', 'small', '--hot-bytes', '16MiB']);
    assert.deepEqual(small.hot_bytes, { value: '16777216', source: 'flag, 16 MiB' });
    assert.deepEqual(small.chunk_cache_bytes, { value: '8388608', source: 'preset small, 8 MiB' });
    assert.deepEqual(small.groups, { value: '4', source: 'preset small' });
    assert.deepEqual(small.listen.source, 'default');
    assert.deepEqual(effective([], { DSTREAM_PRESET: 'large' }).hot_bytes,
                     { value: '4294967296', source: 'preset large, 4 GiB' });
    const file = configFile('preset = "small"\n');
    assert.deepEqual(effective(['--config', file, '--preset', 'large']).groups, { value: '64', source: 'preset large' });
    assert.deepEqual(effective(['--config', file]).groups, { value: '4', source: 'preset small' });
    // standard is the defaults.
    assert.deepEqual(effective(['--preset', 'standard']).hot_bytes, { value: '268435456', source: 'default, 256 MiB' });
});

test('config print: its output is a config file that reads back as the same values', () => {
    const first = run(['config', 'print', '--preset', 'small', '--listen', '127.0.0.1:9', '--access-log',
                       '--staged-part-grace-seconds', '3600']);
    assert.equal(first.code, 0, first.stderr);
    const again = effective(['--config', configFile(first.stdout)]);
    assert.deepEqual(again.listen, { value: "'127.0.0.1:9'", source: 'file' });
    assert.deepEqual(again.access_log, { value: 'true', source: 'file' });
    assert.deepEqual(again.staged_part_grace_seconds, { value: '3600', source: 'file, 1 hour' });
    assert.deepEqual(again.hot_bytes, { value: '33554432', source: 'file, 32 MiB' });
});

for (const [where, args, env, message] of [
    ['flag', ['--hot-bytes', '12'], {},
     'setting hot_bytes (flag --hot-bytes = "12"): must be an integer from 1 MiB to 1 TiB'],
    ['env', [], { DSTREAM_HOT_BYTES: '12' },
     'setting hot_bytes (env DSTREAM_HOT_BYTES = "12"): must be an integer from 1 MiB to 1 TiB'],
    ['file', ['--config', 'FILE:hot_bytes = 12\n'], {},
     'setting hot_bytes (file FILE = 12): must be an integer from 1 MiB to 1 TiB'],
    ['flag', ['--shutdown-timeout-seconds', '0'], {},
     'setting shutdown_timeout_seconds (flag --shutdown-timeout-seconds = "0"): must be an integer from 1 s to 1 hour'],
    ['env', [], { DSTREAM_STAGED_PART_GRACE_SECONDS: '2592001' },
     'setting staged_part_grace_seconds (env DSTREAM_STAGED_PART_GRACE_SECONDS = "2592001"): must be an integer from 1 s to 30 days'],
    ['env', [], { DSTREAM_ACCESS_LOG: 'yes' }, 'setting access_log (env DSTREAM_ACCESS_LOG = "yes"): must be true or false'],
    ['file', ['--config', 'FILE:threads = "many"\n'], {},
     'setting threads (file FILE = "many"): must be an integer from 1 to 256'],
    ['file', ['--config', 'FILE:memory = 1\n'], {}, 'setting memory (file FILE = a TOML integer): must be true or false'],
    ['flag', ['--log-level', 'loud'], {},
     'setting log_level (flag --log-level = "loud"): must be one of trace, debug, info, warn, error'],
    ['flag', ['--listen', 'localhost'], {},
     'setting listen (flag --listen = "localhost"): must be HOST:PORT with a port from 0 to 65535'],
    ['flag', ['--preset', 'huge'], {}, 'setting preset (flag --preset = "huge"): must be one of small, standard, large'],
    ['flag', ['--admin-listen', 'localhost'], {},
     'setting admin_listen (flag --admin-listen = "localhost"): must be HOST:PORT with a port from 0 to 65535, or off'],
    ['flag', ['--admin-token-file', '/nonexistent/dstream-admin-token'], {},
     'setting admin_token_file: cannot read /nonexistent/dstream-admin-token'],
    ['flag', ['--admin-token-file', 'FILE:\n'], {}, 'setting admin_token_file: FILE must hold the token on its first line'],
    ['flag', ['--admin-listen', 'off', '--admin-token-file', 'FILE:t0ken\n'], {},
     'setting admin_token_file: the admin listener is off (--admin-listen off)'],
    ['flag', ['--tls-cert', 'cert.pem'], {}, 'setting tls_cert: --tls-cert and --tls-key go together'],
    ['flag', ['--admin-tls-key', 'key.pem'], {},
     'setting admin_tls_cert: --admin-tls-cert and --admin-tls-key go together'],
    ['file', ['--config', 'FILE:hot_byte = 1\n'], {},
     "config file FILE: unknown setting 'hot_byte' (`dstream config docs` lists them)"],
    ['file', ['--config', 'FILE:threads = \n'], {}, 'config file FILE, line 1:'],
    // A bad value is refused even where a higher source overrides it.
    ['env', ['--groups', '8'], { DSTREAM_GROUPS: '0' }, 'setting groups (env DSTREAM_GROUPS = "0"): must be an integer from 1 to 4096'],
]) {
    test(`config errors: ${where}: ${message} -> exit 2 before anything opens`, () => {
        let file = '';
        const resolved = args.map((a) => {
            if (!a.startsWith('FILE:')) return a;
            file = configFile(a.slice('FILE:'.length));
            return file;
        });
        const expected = message.replace(/FILE/g, file);
        const dataDir = path.join(dir, `never-${files}-${where}`);
        for (const command of [['config', 'print'], ['serve', '--data-dir', dataDir]]) {
            const r = run([...command, ...resolved], env);
            assert.equal(r.code, 2, `${command[0]}: ${r.stdout} ${r.stderr}`);
            assert.ok(r.stderr.includes(expected), `stderr: ${r.stderr}\nexpected: ${expected}`);
            assert.equal(r.stdout, '');
        }
        assert.ok(!existsSync(dataDir), 'the data dir was created');
    });
}

test('config print: an S3 cold store shows its settings, and whether each credential is set, never its value', () => {
    const secret = 'never-print-this-secret-0123456789';
    const env = { AWS_ACCESS_KEY_ID: 'AKIDEXAMPLE', AWS_SECRET_ACCESS_KEY: secret };
    const args = ['config', 'print', '--cold-store', 's3://my-bucket/nodes', '--s3-endpoint', 'http://127.0.0.1:9000'];
    const r = run(args, env);
    assert.equal(r.code, 0, r.stderr);
    assert.match(r.stdout, /^cold_store = 's3:\/\/my-bucket\/nodes'\s+# flag$/m);
    assert.match(r.stdout, /^s3_endpoint = 'http:\/\/127\.0\.0\.1:9000'\s+# flag$/m);
    assert.match(r.stdout, /^s3_region = 'us-east-1'\s+# default$/m);
    assert.match(r.stdout, /AWS_SECRET_ACCESS_KEY set/);
    assert.match(r.stdout, /AWS_SESSION_TOKEN unset/);
    assert.ok(!r.stdout.includes(secret) && !r.stderr.includes(secret), 'the secret was printed');
    assert.ok(!r.stdout.includes('AKIDEXAMPLE'), 'the key id was printed');
});

for (const [args, message] of [
    [['--cold-store', 'http://bucket/prefix'], 'setting cold_store (flag --cold-store = "http://bucket/prefix"): must be empty or s3://BUCKET[/PREFIX]'],
    [['--cold-store', 's3://'], 'setting cold_store (flag --cold-store = "s3://"): must be empty or s3://BUCKET[/PREFIX]'],
    [['--s3-endpoint', 'http://user:pass@127.0.0.1:9000'], 'setting s3_endpoint (flag --s3-endpoint = "http://user:pass@127.0.0.1:9000"): must be empty (AWS) or http(s)://HOST[:PORT], without credentials'],
    [['--memory', '--cold-store', 's3://bucket'], 'setting cold_store: an S3 cold store needs a durable node'],
]) {
    test(`config errors: ${args.join(' ')} -> exit 2`, () => {
        const r = run(['config', 'print', ...args]);
        assert.equal(r.code, 2, r.stdout);
        assert.ok(r.stderr.includes(message), `stderr: ${r.stderr}\nexpected: ${message}`);
    });
}

test('serve with an S3 cold store and no credentials in the environment exits 2, naming the variable', () => {
    const clean = { AWS_ACCESS_KEY_ID: '', AWS_SECRET_ACCESS_KEY: '', AWS_SESSION_TOKEN: '' };
    const r = run(['serve', '--listen', '127.0.0.1:0', '--data-dir', path.join(dir, 's3-no-credentials'),
                   '--cold-store', 's3://bucket/node', '--s3-endpoint', 'http://127.0.0.1:9'], clean);
    assert.equal(r.code, 2, `${r.stdout} ${r.stderr}`);
    assert.match(r.stderr, /AWS_ACCESS_KEY_ID/);
});

test('config errors: unknown flags and a missing config file exit 2 too', () => {
    assert.equal(run(['serve', '--no-such-flag']).code, 2);
    const missing = run(['serve', '--config', path.join(dir, 'missing.toml')]);
    assert.equal(missing.code, 2);
    assert.match(missing.stderr, /missing\.toml: no such file/);
});

test('serve takes its settings from the file: memory = true in the file starts an in-memory node', async () => {
    const file = configFile('memory = true\nlog_level = "warn"\n');
    const srv = await startServer({ memory: false, extraArgs: ['--config', file] });
    try {
        const res = await fetch(`${srv.url}/__ursula/health`);
        assert.equal(res.status, 200);
        assert.match(srv.log(), /MEMORY mode/);
    } finally {
        await srv.stop();
    }
});

test('config docs: Markdown with every setting, its flag, variable, default and bounds', () => {
    const r = run(['config', 'docs']);
    assert.equal(r.code, 0);
    assert.match(r.stdout, /^# Configuration\n/);
    assert.match(r.stdout, /\| `hot_bytes` \| `--hot-bytes` \| `DSTREAM_HOT_BYTES` \| 256 MiB \| an integer from 1 MiB to 1 TiB \|/);
    assert.match(r.stdout, /\| `hot_bytes` \| 32 MiB \| 256 MiB \| 4 GiB \|/);
});
