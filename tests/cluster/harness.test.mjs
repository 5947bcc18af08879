// The partition rules of lib/cluster.mjs on their own, against plain TCP
// listeners (no dstream, no S3): a cut between two loopback addresses stops
// exactly that pair, both ways; isolate-like cuts, heal, and the table is
// gone when the process that made it exits, however it exits.
//
//   node --test tests/cluster/harness.test.mjs      (as root, nftables installed)
import assert from 'node:assert/strict';
import { execFileSync, spawn } from 'node:child_process';
import net from 'node:net';
import { test, after } from 'node:test';
import { fileURLToPath } from 'node:url';

import { Partitions, TABLE, nftMissing, freePort } from './lib/cluster.mjs';

const skip = nftMissing();
const lib = fileURLToPath(new URL('./lib/cluster.mjs', import.meta.url));
const block = `127.${200 + (process.pid % 50)}.${(process.pid >> 6) % 256}`;
const hosts = [2, 3, 4].map((i) => `${block}.${i}`);

const servers = [];
after(() => { for (const s of servers) s.close(); });

async function listen(host) {
    const port = await freePort(host);
    const s = net.createServer((c) => { c.on('error', () => {}); c.end('hi'); });
    await new Promise((r) => s.listen(port, host, r));
    servers.push(s);
    return port;
}

// Whether a connection from `from` to host:port opens within `ms`.
function connects(from, host, port, ms = 700) {
    return new Promise((resolve) => {
        const c = net.connect({ host, port, localAddress: from });
        const timer = setTimeout(() => { c.destroy(); resolve(false); }, ms);
        c.once('connect', () => { clearTimeout(timer); c.destroy(); resolve(true); });
        c.once('error', () => { clearTimeout(timer); resolve(false); });
    });
}

function tables() {
    return execFileSync(process.getuid() === 0 ? 'nft' : 'sudo', [...(process.getuid() === 0 ? [] : ['-n', 'nft']), 'list', 'tables'],
                        { encoding: 'utf8' });
}

test('a cut stops exactly its pair of addresses, both ways, until heal', { skip: skip ?? false }, async () => {
    const ports = await Promise.all(hosts.map(listen));
    const [a, b, c] = hosts;
    const [pa, pb, pc] = ports;
    assert.ok(await connects(a, b, pb), 'a -> b before any cut');
    const cuts = new Partitions();
    cuts.cut(a, b);
    assert.match(tables(), new RegExp(`table inet ${TABLE}\\b`));
    assert.equal(await connects(a, b, pb), false, 'a -> b is cut');
    assert.equal(await connects(b, a, pa), false, 'b -> a is cut');
    assert.ok(await connects(a, c, pc), 'a -> c is not');
    assert.ok(await connects(c, b, pb), 'c -> b is not');
    assert.ok(await connects('127.0.0.1', b, pb), 'the test itself still reaches b');
    // a cut off from both others
    cuts.cut(a, c);
    assert.equal(await connects(c, a, pa), false, 'c -> a is cut');
    assert.ok(await connects(b, c, pc), 'b -> c is not');
    cuts.heal();
    assert.ok(await connects(a, b, pb), 'a -> b after heal');
    assert.ok(await connects(c, a, pa), 'c -> a after heal');
});

// A child process that imports the harness, cuts a pair, then ends as
// `how` says; resolves once it exited, to the table's name.
function childThatCuts(how) {
    const code = `
        import { Partitions, TABLE } from ${JSON.stringify(lib)};
        new Partitions().cut('${hosts[0]}', '${hosts[1]}');
        console.log(TABLE);
        ${how === 'throw' ? "setTimeout(() => { throw new Error('boom'); }, 10);" : ''}
        ${how === 'exit' ? 'process.exit(3);' : ''}
        ${how === 'signal' ? 'setInterval(() => {}, 1000);' : ''}
    `;
    const child = spawn(process.execPath, ['--input-type=module', '-e', code], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (d) => {
        out += d;
        if (how === 'signal' && out.includes('\n')) child.kill('SIGTERM');
    });
    child.stderr.on('data', () => {});
    return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ table: out.trim(), code, signal })));
}

for (const how of ['exit', 'throw', 'signal']) {
    test(`the table is deleted when its process ends (${how})`, { skip: skip ?? false }, async () => {
        const r = await childThatCuts(how);
        assert.match(r.table, /^dstream_test_\d+$/, JSON.stringify(r));
        assert.doesNotMatch(tables(), new RegExp(`table inet ${r.table}\\b`), `${r.table} left behind (${JSON.stringify(r)})`);
    });
}
