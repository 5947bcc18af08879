// A plain HTTP/1.1 connection whose requests keep going to one stream moves
// to the I/O thread that runs the stream's group (edge/server.h). Two
// connections accepted one after the other land on the two I/O threads
// (round robin), so exactly one of them is on the other thread than the
// stream's group, whichever that is.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { notOnCluster, notOverTls, startServer } from './lib/server.mjs';
import { uniq, RawConn, rawRequest } from './lib/http.mjs';
import { parsePrometheus, value } from './lib/prometheus.mjs';

const OCTET = 'application/octet-stream';
const skip = notOverTls('only plain connections move') ||
    notOnCluster('it counts one process\'s connections');

async function movedConnections(srv) {
    const res = await fetch(`${srv.url}/__ursula/metrics`);
    assert.equal(res.status, 200);
    return value(parsePrometheus(await res.text()), 'dstream_http_connections_moved_total');
}

// Writes `bodies` as pipelined appends in one write; every answer is a 204.
async function appendPipelined(conn, path, bodies) {
    await conn.write(Buffer.concat(bodies.map((body) =>
        rawRequest('POST', path, { headers: { 'Content-Type': OCTET }, body }))));
    for (const body of bodies) {
        const res = await conn.readResponse();
        assert.equal(res.status, 204, `the append of ${body}`);
    }
}

// Runs `fn` against a server of two I/O threads, stopped after it.
async function withTwoThreads(fn) {
    const srv = await startServer({ extraArgs: ['--threads', '2'] });
    try {
        await fn(srv);
    } finally {
        await srv.stop();
    }
}

async function twoConnectionsWriting(srv, path) {
    const created = await fetch(srv.url + path, { method: 'PUT', headers: { 'content-type': OCTET } });
    assert.equal(created.status, 201);
    const first = await RawConn.open(srv.port);
    const second = await RawConn.open(srv.port);
    // Eight at once: the move comes after the fourth answer, most often with
    // the other four read into the connection's buffer, which must follow it.
    const a = Array.from({ length: 8 }, (_, i) => `a${i};`);
    const b = Array.from({ length: 8 }, (_, i) => `b${i};`);
    await appendPipelined(first, path, a);
    await appendPipelined(second, path, b);
    return { first, second, written: a.join('') + b.join('') };
}

test('a connection that keeps writing to one stream moves to its group\'s thread, pipelined requests kept in order',
     { skip }, () => withTwoThreads(async (srv) => {
    const path = `/bkt-moves/${uniq('m')}`;
    const { first, second, written } = await twoConnectionsWriting(srv, path);
    assert.equal(await movedConnections(srv), 1);
    // Both go on serving, and the moved one stays where it went.
    await appendPipelined(first, path, ['c;', 'd;', 'e;', 'f;', 'g;']);
    await appendPipelined(second, path, ['h;', 'i;', 'j;', 'k;', 'l;']);
    assert.equal(await movedConnections(srv), 1);
    await first.write(rawRequest('GET', `${path}?offset=-1`));
    const read = await first.readResponse();
    assert.equal(read.status, 200);
    assert.equal(read.body.toString(), `${written}c;d;e;f;g;h;i;j;k;l;`);
    first.destroy();
    second.destroy();
}));

test('a connection that takes streams in turn does not move back and forth', { skip }, () => withTwoThreads(async (srv) => {
    const conn = await RawConn.open(srv.port);
    const paths = Array.from({ length: 16 }, (_, i) => `/bkt-moves/${uniq(`turn${i}`)}`);
    for (const path of paths) {
        await conn.write(rawRequest('PUT', path, { headers: { 'Content-Type': OCTET } }));
        assert.equal((await conn.readResponse()).status, 201);
    }
    // Four rounds over the 16 streams, a request to each in turn.
    for (let round = 0; round < 4; round++) {
        for (const path of paths) {
            await conn.write(rawRequest('POST', path, { headers: { 'Content-Type': OCTET }, body: 'x' }));
            assert.equal((await conn.readResponse()).status, 204);
        }
    }
    // None, unless four streams in a row share a group (then once).
    const moved = await movedConnections(srv);
    assert.ok(moved <= 1, `${moved} moves in 64 requests`);
    conn.destroy();
}));

test('a draining server closes a moved connection at once', { skip }, () => withTwoThreads(async (srv) => {
    const { first, second } = await twoConnectionsWriting(srv, `/bkt-moves/${uniq('d')}`);
    assert.equal(await movedConnections(srv), 1);
    srv.signal('SIGTERM');
    assert.ok(await first.waitClosed(3000), 'the first connection is closed');
    assert.ok(await second.waitClosed(3000), 'the second connection is closed');
    const exit = await srv.waitExit(5000);
    assert.ok(exit !== null, 'the server exits');
    assert.equal(exit.code, 0);
}));
