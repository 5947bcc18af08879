// Snapshots, retention and bootstrap (extensions 2.1, 2.2, 2.4, 2.5, 3):
// publish with BLAKE3 digests (checked against b3sum), inline and cold
// bodies, snapshot reads with ETag and byte ranges, the retention advance and
// 410 below it, multipart bootstrap, a client that rebuilds its state from
// bootstrap after retention, and durability across a crash (kill -9).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import path from 'node:path';
import { startServer } from './lib/server.mjs';
import { uniq, expectError, offsetNum, RawConn, rawRequest } from './lib/http.mjs';
import { b3sum, digestInput, snapshotDigest as expectedDigest } from './lib/digest.mjs';
import { coldObjects, filesUnder, readIfPresent } from './lib/files.mjs';

// One durable server (cold tier on) for the file; the crash test starts its own.
let srv;
before(async () => {
    srv = await startServer({ memory: false });
});
after(async () => {
    await srv?.stop();
});

const OCTET = 'application/octet-stream';
const JSON_CT = 'application/json';
const MiB = 1024 * 1024;
const INC = 'stream-incarnation';

const streamUrl = (prefix = 'snap', base = srv.url) => `${base}/bkt-snap/${uniq(prefix)}`;
// The 20-digit offset token of a byte position.
const tok = (n) => String(n).padStart(20, '0');

// ---------------------------------------------------------------------------
// Helpers.

async function createStream(url, contentType = OCTET, body = undefined) {
    const res = await fetch(url, { method: 'PUT', headers: { 'content-type': contentType }, body });
    assert.equal(res.status, 201, `create ${url}: ${await res.text()}`);
    return { next: res.headers.get('stream-next-offset'), token: res.headers.get(INC) };
}

async function append(url, body, contentType = OCTET) {
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': contentType }, body });
    assert.equal(res.status, 204, `append: ${await res.text()}`);
    return res.headers.get('stream-next-offset');
}

// PUT {stream}/snapshot/{offset}; contentType null sends no Content-Type.
async function publish(url, offset, body, contentType = OCTET, headers = {}) {
    const h = { ...headers };
    if (contentType !== null) h['content-type'] = contentType;
    return fetch(`${url}/snapshot/${offset}`, { method: 'PUT', headers: h, body: Buffer.from(body) });
}

async function publishOk(url, offset, body, contentType = OCTET) {
    const res = await publish(url, offset, body, contentType);
    const text = await res.text();
    assert.equal(res.status, 204, `publish at ${offset}: ${text}`);
    assert.equal(res.headers.get('stream-snapshot-offset'), offset);
    const digest = res.headers.get('stream-snapshot-digest');
    assert.match(digest ?? '', /^[0-9a-f]{64}$/, `digest ${digest}`);
    return digest;
}

const getSnapshot = (url, offset, headers = {}) => fetch(`${url}/snapshot/${offset}`, { headers });
const head = (url) => fetch(url, { method: 'HEAD' });
const retain = (url, offset, headers = {}) => fetch(`${url}/retention/${offset}`, { method: 'PUT', headers });

async function tailOf(url) {
    const res = await head(url);
    assert.equal(res.status, 200);
    return res.headers.get('stream-next-offset');
}

// True when a cold-tier object holds exactly `body` (one removed between the
// listing and its read does not).
function heldAsObject(dataDir, body) {
    return coldObjects(dataDir).some((f) => f.size === body.length && readIfPresent(f.path)?.equals(body));
}

// The [start, end) ranges of the stream chunks flushed to the cold tier
// (objects named chunks/.../<incarnation>/<start>-<end>), for "this byte is
// cold now" waits.
function coldChunkRanges(dataDir, incarnation) {
    return coldObjects(dataDir, 'chunks').map((f) => {
        const m = new RegExp(`/${incarnation}/(\\d{20})-(\\d{20})$`).exec(f.key);
        return m ? [Number(m[1]), Number(m[2])] : null;
    }).filter(Boolean);
}

// The boundary of a multipart/mixed Content-Type.
function boundaryOf(contentType) {
    const m = /^multipart\/mixed\s*;\s*boundary=("?)([^";]+)\1\s*$/i.exec(contentType ?? '');
    assert.ok(m, `not multipart/mixed with a boundary: ${contentType}`);
    return m[2];
}

// Parses an RFC 2046 multipart body: [{headers (lower-case keys), body}].
// The CRLF before each delimiter belongs to the delimiter.
function parseMultipart(buf, boundary) {
    const dash = Buffer.from(`--${boundary}`);
    const delim = Buffer.from(`\r\n--${boundary}`);
    assert.equal(buf.indexOf(dash), 0, 'the body starts with the first delimiter');
    const parts = [];
    let pos = dash.length;
    while (true) {
        const after = buf.subarray(pos, pos + 2).toString('latin1');
        if (after === '--') {
            const rest = buf.subarray(pos + 2).toString('latin1');
            assert.ok(rest === '' || rest === '\r\n', `epilogue after the close delimiter: ${JSON.stringify(rest)}`);
            break;
        }
        assert.equal(after, '\r\n', `delimiter not followed by CRLF at ${pos}`);
        pos += 2;
        const headers = {};
        let bodyStart;
        if (buf.subarray(pos, pos + 2).toString('latin1') === '\r\n') {
            bodyStart = pos + 2;
        } else {
            const headEnd = buf.indexOf('\r\n\r\n', pos);
            assert.ok(headEnd >= 0, 'part headers end');
            for (const line of buf.subarray(pos, headEnd).toString('latin1').split('\r\n')) {
                const c = line.indexOf(':');
                headers[line.slice(0, c).trim().toLowerCase()] = line.slice(c + 1).trim();
            }
            bodyStart = headEnd + 4;
        }
        const next = buf.indexOf(delim, bodyStart);
        assert.ok(next >= 0, `part ${parts.length} has no closing delimiter`);
        parts.push({ headers, body: buf.subarray(bodyStart, next) });
        pos = next + delim.length;
    }
    return parts;
}

async function bootstrap(url, headers = {}) {
    const res = await fetch(`${url}/bootstrap`, { headers });
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(res.status, 200, `bootstrap: ${body.toString()}`);
    const boundary = boundaryOf(res.headers.get('content-type'));
    return { res, boundary, parts: parseMultipart(body, boundary) };
}

// ---------------------------------------------------------------------------
// 2.2 digests: several sizes, inline and cold, checked against b3sum.

const SIZES = [
    { name: '0 bytes', size: 0, ct: OCTET },
    { name: '1 byte', size: 1, ct: 'application/x-one' },
    { name: '1000 bytes', size: 1000, ct: null },  // no Content-Type: application/octet-stream
    { name: '1 MiB + 7 (cold)', size: MiB + 7, ct: 'application/vnd.example+cbor', cold: true },
    { name: '5 MiB (cold)', size: 5 * MiB, ct: OCTET, cold: true },
    { name: '9.5 MiB, several pieces (cold)', size: 9 * MiB + MiB / 2 + 13, ct: 'application/x-big; v=2', cold: true },
];

for (const c of SIZES) {
    test(`ext 2.2: a ${c.name} snapshot answers 204 with the BLAKE3 digest of (u64 LE ct length, ct, body) that b3sum computes, and reads back byte-identical`, async () => {
        const url = streamUrl('dig');
        const { next } = await createStream(url, OCTET, 'history-' + c.size);
        const body = randomBytes(c.size);
        const storedCt = c.ct ?? OCTET;
        const want = expectedDigest(storedCt, body);
        const digest = await publishOk(url, next, body, c.ct);
        assert.equal(digest, want, `digest of ${c.name}`);

        const res = await getSnapshot(url, next);
        const got = Buffer.from(await res.arrayBuffer());
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('content-type'), storedCt);
        assert.equal(res.headers.get('stream-snapshot-digest'), want);
        assert.equal(res.headers.get('etag'), `"${want}"`);
        assert.equal(got.length, body.length, 'length read back');
        assert.ok(got.equals(body), 'bytes read back');

        const h = await head(url);
        assert.equal(h.headers.get('stream-snapshot-offset'), next);
        assert.equal(h.headers.get('stream-snapshot-digest'), want);

        if (c.cold) {
            assert.ok(heldAsObject(srv.dataDir, body), `the ${c.name} body is held as a cold object`);
        }
        // A repeat of the same publish: the same digest (cold bodies too).
        assert.equal(await publishOk(url, next, body, c.ct), want, 'repeat');
    });
}

test('ext 2.5: a byte range inside a cold 5 MiB snapshot answers 206 with exactly those bytes', async () => {
    const url = streamUrl('coldrange');
    const { next } = await createStream(url, OCTET, 'x');
    const body = randomBytes(5 * MiB);
    const digest = await publishOk(url, next, body);
    assert.ok(heldAsObject(srv.dataDir, body), 'cold object');
    const ranges = [
        [3_000_001, 3_100_000],      // in the middle
        [MiB - 3, MiB + 2],          // across a MiB mark
        [5 * MiB - 10, 5 * MiB - 1], // the last bytes
        [0, 0],                      // the first byte
    ];
    for (const [a, b] of ranges) {
        const res = await getSnapshot(url, next, { range: `bytes=${a}-${b}` });
        const got = Buffer.from(await res.arrayBuffer());
        assert.equal(res.status, 206, `bytes=${a}-${b}`);
        assert.equal(res.headers.get('content-range'), `bytes ${a}-${b}/${body.length}`);
        assert.equal(res.headers.get('stream-snapshot-digest'), digest, 'the digest covers the whole snapshot');
        assert.ok(got.equals(body.subarray(a, b + 1)), `bytes of ${a}-${b}`);
    }
    const suffix = await getSnapshot(url, next, { range: 'bytes=-4097' });
    assert.equal(suffix.status, 206);
    assert.equal(suffix.headers.get('content-range'), `bytes ${body.length - 4097}-${body.length - 1}/${body.length}`);
    assert.ok(Buffer.from(await suffix.arrayBuffer()).equals(body.subarray(body.length - 4097)));
});

// ---------------------------------------------------------------------------
// 2.2 publish rules.

test('ext 2.2: a publish without Content-Type stores application/octet-stream and digests it', async () => {
    const url = streamUrl('defct');
    const { next } = await createStream(url, 'text/plain', 'hello');
    const body = Buffer.from('snapshot without a content type');
    const digest = await publishOk(url, next, body, null);
    assert.equal(digest, expectedDigest(OCTET, body));
    const res = await getSnapshot(url, next);
    assert.equal(res.headers.get('content-type'), OCTET);
    assert.equal(await res.text(), body.toString());
});

test('ext 2.2: a repeated publish with the same content type and body answers 204 with the same digest', async () => {
    const url = streamUrl('repeat');
    const { next } = await createStream(url, OCTET, 'abc');
    const body = Buffer.from('{"state":1}');
    const first = await publishOk(url, next, body, JSON_CT);
    const second = await publishOk(url, next, body, JSON_CT);
    assert.equal(second, first);
    const again = await publish(url, next, body, JSON_CT);
    assert.equal(again.status, 204);
    assert.ok(again.headers.get(INC), 'a publish answer carries Stream-Incarnation');
    // Still the latest and readable.
    const res = await getSnapshot(url, next);
    assert.equal(res.status, 200);
    assert.equal(await res.text(), body.toString());
});

test('ext 2.2: different content at the published offset answers 409 SNAPSHOT_CONFLICT naming the latest', async () => {
    const url = streamUrl('conflict');
    const { next } = await createStream(url, OCTET, 'abcdef');
    const body = Buffer.from('original');
    const digest = await publishOk(url, next, body);
    const cases = [
        ['another body', Buffer.from('changed!'), OCTET],
        ['another content type', body, 'text/plain'],
        ['an empty body', Buffer.alloc(0), OCTET],
        ['a cold body', randomBytes(MiB + 1), OCTET],
    ];
    for (const [what, b, ct] of cases) {
        const res = await publish(url, next, b, ct);
        await expectError(res, 409, 'SNAPSHOT_CONFLICT');
        assert.equal(res.headers.get('stream-snapshot-offset'), next, what);
        assert.equal(res.headers.get('stream-snapshot-digest'), digest, what);
    }
    const res = await getSnapshot(url, next);
    assert.equal(await res.text(), 'original', 'the first snapshot stays');
});

test('ext 2.2: a publish at an offset below the latest snapshot answers 409 naming the latest', async () => {
    const url = streamUrl('below');
    const { next: first } = await createStream(url, OCTET, 'aaaa');
    const older = await publishOk(url, first, Buffer.from('at 4'));
    const second = await append(url, 'bbbb');
    const latest = await publishOk(url, second, Buffer.from('at 8'));
    assert.notEqual(older, latest);
    // The superseded snapshot again, and a fresh one at an older offset.
    for (const [offset, body] of [[first, 'at 4'], [tok(2), 'at 2'], [tok(0), '']]) {
        const res = await publish(url, offset, Buffer.from(body));
        await expectError(res, 409, 'SNAPSHOT_CONFLICT');
        assert.equal(res.headers.get('stream-snapshot-offset'), second, `publish at ${offset}`);
        assert.equal(res.headers.get('stream-snapshot-digest'), latest, `publish at ${offset}`);
    }
    const h = await head(url);
    assert.equal(h.headers.get('stream-snapshot-offset'), second);
    assert.equal(h.headers.get('stream-snapshot-digest'), latest);
});

test('ext 2.2: a publish beyond the tail answers 409 SNAPSHOT_CONFLICT that names no snapshot', async () => {
    const url = streamUrl('beyond');
    const { next } = await createStream(url, OCTET, 'abc');
    assert.equal(offsetNum(next), 3);
    // No snapshot yet.
    let res = await publish(url, tok(4), Buffer.from('x'));
    await expectError(res, 409, 'SNAPSHOT_CONFLICT');
    assert.equal(res.headers.get('stream-snapshot-offset'), null);
    assert.equal(res.headers.get('stream-snapshot-digest'), null);
    // With a snapshot below the tail: still names none.
    await publishOk(url, tok(2), Buffer.from('two'));
    res = await publish(url, tok(1000), Buffer.from('x'));
    await expectError(res, 409, 'SNAPSHOT_CONFLICT');
    assert.equal(res.headers.get('stream-snapshot-offset'), null);
    assert.equal(res.headers.get('stream-snapshot-digest'), null);
    // Cold body beyond the tail: refused the same way, and the old snapshot stays.
    res = await publish(url, tok(4), randomBytes(MiB + 100));
    await expectError(res, 409, 'SNAPSHOT_CONFLICT');
    assert.equal(res.headers.get('stream-snapshot-offset'), null);
    const h = await head(url);
    assert.equal(h.headers.get('stream-snapshot-offset'), tok(2));
});

test('ext 2.1: a JSON stream snapshot offset inside a message answers 400 NOT_JSON_BOUNDARY; message boundaries are accepted', async () => {
    const url = streamUrl('jsonb');
    const { next } = await createStream(url, JSON_CT, '[{"a":1},{"b":22}]');
    // Stored: {"a":1}\n{"b":22}\n  (8 + 9 bytes)
    assert.equal(offsetNum(next), 17);
    for (const inside of [1, 7, 9, 16]) {
        const res = await publish(url, tok(inside), Buffer.from('{}'), JSON_CT);
        await expectError(res, 400, 'NOT_JSON_BOUNDARY');
        assert.equal(res.headers.get('stream-snapshot-offset'), null);
    }
    const h = await head(url);
    assert.equal(h.headers.get('stream-snapshot-offset'), null, 'nothing was published');
    await publishOk(url, tok(0), Buffer.from('{}'), JSON_CT);  // the first offset
    await publishOk(url, tok(8), Buffer.from('{"a":1}'), JSON_CT);
    await publishOk(url, tok(17), Buffer.from('{"a":1,"b":22}'), JSON_CT);
});

test('ext 2.2: a publish to a stream that does not exist answers 404 STREAM_NOT_FOUND', async () => {
    const url = streamUrl('nostream');
    const res = await publish(url, tok(0), Buffer.from('x'));
    await expectError(res, 404, 'STREAM_NOT_FOUND');
    assert.equal(res.headers.get(INC), null);
    // A cold-sized body too.
    const cold = await publish(url, tok(0), randomBytes(MiB));
    await expectError(cold, 404, 'STREAM_NOT_FOUND');
    // And a read of its snapshot.
    const read = await getSnapshot(url, tok(0));
    await expectError(read, 404, 'STREAM_NOT_FOUND');
    assert.equal(read.headers.get(INC), null);
});

test('ext 2.2: a publish below the retained offset answers 410 Gone', async () => {
    const url = streamUrl('gone');
    const { next: four } = await createStream(url, OCTET, 'abcd');
    const eight = await append(url, 'efgh');
    await publishOk(url, eight, Buffer.from('eight'));
    const r = await retain(url, four);
    assert.equal(r.status, 204);
    // 2 < retained 4: Gone (extensions 2.2: "where a single-request publish answers 410").
    const res = await publish(url, tok(2), Buffer.from('two'));
    await expectError(res, 410, 'STREAM_GONE');
});

// ---------------------------------------------------------------------------
// 2.4 HEAD metadata.

test('ext 2.4: HEAD sends Stream-Retained-Offset always, and Stream-Snapshot-Offset/-Digest only once a snapshot exists', async () => {
    const url = streamUrl('head');
    const { next, token } = await createStream(url, OCTET, 'abcdef');
    let h = await head(url);
    assert.equal(h.status, 200);
    assert.equal(h.headers.get('stream-retained-offset'), tok(0), 'the first byte before any retention');
    assert.equal(h.headers.get('stream-snapshot-offset'), null);
    assert.equal(h.headers.get('stream-snapshot-digest'), null);
    assert.equal(h.headers.get(INC), token);
    // An empty stream too.
    const empty = streamUrl('head-empty');
    await createStream(empty, OCTET);
    const he = await head(empty);
    assert.equal(he.headers.get('stream-retained-offset'), tok(0));
    assert.equal(he.headers.get('stream-snapshot-offset'), null);

    const digest = await publishOk(url, tok(3), Buffer.from('abc'));
    h = await head(url);
    assert.equal(h.headers.get('stream-snapshot-offset'), tok(3));
    assert.equal(h.headers.get('stream-snapshot-digest'), digest);
    assert.equal(h.headers.get('stream-retained-offset'), tok(0), 'publishing does not move retention');
    const later = await publishOk(url, next, Buffer.from('abcdef'));
    h = await head(url);
    assert.equal(h.headers.get('stream-snapshot-offset'), next);
    assert.equal(h.headers.get('stream-snapshot-digest'), later);
});

// ---------------------------------------------------------------------------
// 2.5 snapshot reads.

test('ext 2.5: a snapshot read answers 200 with its Content-Type, offsets, digest, quoted ETag, Accept-Ranges, and Up-To-Date only at the tail', async () => {
    const url = streamUrl('read');
    const { next, token } = await createStream(url, OCTET, 'abcdef');
    const body = Buffer.from('{"snap":"shot"}');
    const digest = await publishOk(url, next, body, 'application/json; charset=utf-8');
    let res = await getSnapshot(url, next);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/json; charset=utf-8');
    assert.equal(res.headers.get('stream-snapshot-offset'), next);
    assert.equal(res.headers.get('stream-snapshot-digest'), digest);
    assert.equal(res.headers.get('stream-next-offset'), next);
    assert.equal(res.headers.get('stream-up-to-date'), 'true', 'the snapshot is at the tail');
    assert.equal(res.headers.get('etag'), `"${digest}"`);
    assert.equal(res.headers.get('accept-ranges'), 'bytes');
    assert.equal(res.headers.get(INC), token);
    assert.equal(res.headers.get('content-length'), String(body.length));
    assert.equal(await res.text(), body.toString());

    await append(url, 'ghi');
    res = await getSnapshot(url, next);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('stream-next-offset'), next, 'still the snapshot offset');
    assert.notEqual(res.headers.get('stream-up-to-date'), 'true', 'an update follows the snapshot');
    await res.arrayBuffer();
    // A plain stream read never returns snapshot bytes (3.4).
    const plain = await fetch(`${url}?offset=-1`);
    assert.equal(await plain.text(), 'abcdefghi');
});

test('ext 2.5: If-None-Match with the ETag answers 304 with the same headers and no body, and ignores a range', async () => {
    const url = streamUrl('inm');
    const { next, token } = await createStream(url, OCTET, 'abc');
    const digest = await publishOk(url, next, Buffer.from('0123456789'));
    const etag = `"${digest}"`;
    for (const extra of [{}, { range: 'bytes=2-5' }, { range: 'bytes=100-' }]) {
        const res = await getSnapshot(url, next, { 'if-none-match': etag, ...extra });
        assert.equal(res.status, 304, JSON.stringify(extra));
        assert.equal(res.headers.get('etag'), etag);
        assert.equal(res.headers.get('stream-snapshot-offset'), next);
        assert.equal(res.headers.get('stream-snapshot-digest'), digest);
        assert.equal(res.headers.get('stream-next-offset'), next);
        assert.equal(res.headers.get(INC), token);
        assert.equal((await res.arrayBuffer()).byteLength, 0);
    }
    const other = await getSnapshot(url, next, { 'if-none-match': '"0000"' });
    assert.equal(other.status, 200);
    assert.equal(await other.text(), '0123456789');
});

test('ext 2.5: Range bytes=a-b, a- and -n answer 206 with Content-Range and exactly those bytes', async () => {
    const url = streamUrl('range');
    const { next, token } = await createStream(url, OCTET, 'abc');
    const body = Buffer.from('0123456789abcdefghij');  // 20 bytes
    const digest = await publishOk(url, next, body);
    const cases = [
        ['bytes=0-0', 0, 0],
        ['bytes=2-5', 2, 5],
        ['bytes=5-', 5, 19],
        ['bytes=-3', 17, 19],
        ['bytes=10-1000', 10, 19],  // the last position is clamped
        ['bytes=-50', 0, 19],       // a suffix longer than the body
        ['bytes=19-19', 19, 19],
    ];
    for (const [range, a, b] of cases) {
        const res = await getSnapshot(url, next, { range });
        const got = Buffer.from(await res.arrayBuffer());
        assert.equal(res.status, 206, range);
        assert.equal(res.headers.get('content-range'), `bytes ${a}-${b}/20`, range);
        assert.equal(got.toString(), body.subarray(a, b + 1).toString(), range);
        assert.equal(res.headers.get('content-length'), String(b - a + 1), range);
        assert.equal(res.headers.get('stream-snapshot-digest'), digest, range);
        assert.equal(res.headers.get('etag'), `"${digest}"`, range);
        assert.equal(res.headers.get('accept-ranges'), 'bytes', range);
        assert.equal(res.headers.get(INC), token, range);
        assert.equal(res.headers.get('content-type'), OCTET, range);
    }
});

test('ext 2.5: a range that starts at or past the end answers 416 RANGE_NOT_SATISFIABLE with Content-Range: bytes */total', async () => {
    const url = streamUrl('r416');
    const { next, token } = await createStream(url, OCTET, 'abc');
    await publishOk(url, next, Buffer.from('0123456789'));
    for (const range of ['bytes=10-', 'bytes=10-20', 'bytes=999-1000']) {
        const res = await getSnapshot(url, next, { range });
        await expectError(res, 416, 'RANGE_NOT_SATISFIABLE');
        assert.equal(res.headers.get('content-range'), 'bytes */10', range);
        assert.equal(res.headers.get(INC), token, range);
    }
});

test('ext 2.5: any range of an empty snapshot answers 416 with Content-Range: bytes */0', async () => {
    const url = streamUrl('r416e');
    const { next } = await createStream(url, OCTET, 'abc');
    await publishOk(url, next, Buffer.alloc(0));
    for (const range of ['bytes=0-', 'bytes=0-0', 'bytes=-5']) {
        const res = await getSnapshot(url, next, { range });
        await expectError(res, 416, 'RANGE_NOT_SATISFIABLE');
        assert.equal(res.headers.get('content-range'), 'bytes */0', range);
    }
});

test('ext 2.5: several ranges, an unparseable range, or If-Range answer 200 with the whole snapshot', async () => {
    const url = streamUrl('rmulti');
    const { next } = await createStream(url, OCTET, 'abc');
    const digest = await publishOk(url, next, Buffer.from('0123456789'));
    for (const headers of [{ range: 'bytes=0-1,4-5' }, { range: 'bytes=0-1, 3-' }, { range: 'bytes=5-2' },
                           { range: 'items=0-1' }, { range: 'bytes=2-5', 'if-range': `"${digest}"` }]) {
        const res = await getSnapshot(url, next, headers);
        assert.equal(res.status, 200, JSON.stringify(headers));
        assert.equal(res.headers.get('content-range'), null);
        assert.equal(await res.text(), '0123456789');
    }
});

test('ext 2.5: a snapshot that is not the latest answers 404 SNAPSHOT_NOT_FOUND with Stream-Incarnation', async () => {
    const url = streamUrl('notlatest');
    const { next: three, token } = await createStream(url, OCTET, 'abc');
    // None published yet.
    let res = await getSnapshot(url, three);
    await expectError(res, 404, 'SNAPSHOT_NOT_FOUND');
    assert.equal(res.headers.get(INC), token);
    await publishOk(url, three, Buffer.from('three'));
    const six = await append(url, 'def');
    await publishOk(url, six, randomBytes(MiB + 5));  // a cold latest
    for (const offset of [three, tok(0), tok(4), tok(1000)]) {
        res = await getSnapshot(url, offset);
        await expectError(res, 404, 'SNAPSHOT_NOT_FOUND');
        assert.equal(res.headers.get(INC), token, `read at ${offset}`);
    }
    // A range on a superseded snapshot: 404 first.
    res = await getSnapshot(url, three, { range: 'bytes=100-' });
    await expectError(res, 404, 'SNAPSHOT_NOT_FOUND');
    res = await getSnapshot(url, six);
    assert.equal(res.status, 200);
    assert.equal((await res.arrayBuffer()).byteLength, MiB + 5);
});

// ---------------------------------------------------------------------------
// 2.2 retention.

test('ext 2.2: a retention advance answers 204 with Stream-Retained-Offset and Stream-Incarnation, and HEAD reports it', async () => {
    const url = streamUrl('ret');
    const { next: four, token } = await createStream(url, OCTET, 'abcd');
    const eight = await append(url, 'efgh');
    await publishOk(url, eight, Buffer.from('snapshot at 8'));
    const res = await retain(url, four);
    assert.equal(res.status, 204, await res.text());
    assert.equal(res.headers.get('stream-retained-offset'), four);
    assert.equal(res.headers.get(INC), token);
    let h = await head(url);
    assert.equal(h.headers.get('stream-retained-offset'), four);
    assert.equal(h.headers.get('stream-snapshot-offset'), eight, 'retention keeps the snapshot');
    // Up to the snapshot offset itself.
    const res2 = await retain(url, eight);
    assert.equal(res2.status, 204);
    assert.equal(res2.headers.get('stream-retained-offset'), eight);
    h = await head(url);
    assert.equal(h.headers.get('stream-retained-offset'), eight);
    assert.equal(h.headers.get('stream-next-offset'), eight);
});

test('ext 2.2: a retention offset newer than the latest snapshot, or without a snapshot, answers 400 INVALID_RETENTION', async () => {
    const url = streamUrl('retinv');
    const { next: four } = await createStream(url, OCTET, 'abcd');
    const eight = await append(url, 'efgh');
    // No snapshot at all.
    let res = await retain(url, tok(2));
    await expectError(res, 400, 'INVALID_RETENTION');
    await publishOk(url, four, Buffer.from('at four'));
    for (const offset of [tok(5), eight, tok(100)]) {
        res = await retain(url, offset);
        await expectError(res, 400, 'INVALID_RETENTION');
    }
    const h = await head(url);
    assert.equal(h.headers.get('stream-retained-offset'), tok(0), 'nothing was retained');
    const read = await fetch(`${url}?offset=-1`);
    assert.equal(await read.text(), 'abcdefgh');
});

test('ext 2.1: a JSON stream retention offset inside a message answers 400 NOT_JSON_BOUNDARY', async () => {
    const url = streamUrl('retjson');
    const { next } = await createStream(url, JSON_CT, '[{"a":1},{"b":22},{"c":333}]');
    await publishOk(url, next, Buffer.from('{"n":3}'), JSON_CT);
    for (const inside of [1, 7, 9, 20]) {
        const res = await retain(url, tok(inside));
        await expectError(res, 400, 'NOT_JSON_BOUNDARY');
    }
    let h = await head(url);
    assert.equal(h.headers.get('stream-retained-offset'), tok(0));
    const ok = await retain(url, tok(8));
    assert.equal(ok.status, 204);
    assert.equal(ok.headers.get('stream-retained-offset'), tok(8));
    const read = await fetch(`${url}?offset=${tok(8)}`);
    assert.equal(read.status, 200);
    assert.equal(await read.text(), '{"b":22}\n{"c":333}\n');
});

test('ext 2.2: a retention offset at or below the current one answers 204 with the current value and changes nothing', async () => {
    const url = streamUrl('retback');
    const { next: four, token } = await createStream(url, OCTET, 'abcd');
    const eight = await append(url, 'efgh');
    await publishOk(url, eight, Buffer.from('s'));
    assert.equal((await retain(url, tok(6))).status, 204);
    for (const offset of [tok(6), four, tok(0)]) {
        const res = await retain(url, offset);
        assert.equal(res.status, 204, `retention to ${offset}: ${await res.text()}`);
        assert.equal(res.headers.get('stream-retained-offset'), tok(6), `retention to ${offset}`);
        assert.equal(res.headers.get(INC), token);
    }
    const h = await head(url);
    assert.equal(h.headers.get('stream-retained-offset'), tok(6));
    const read = await fetch(`${url}?offset=${tok(6)}`);
    assert.equal(await read.text(), 'gh');
});

test('ext 2.2: after retention, reads below it and offset=-1 answer 410 STREAM_GONE with Stream-Incarnation; reads at it succeed', async () => {
    const url = streamUrl('ret410');
    const { token } = await createStream(url, OCTET, 'abcd');
    const eight = await append(url, 'efgh');
    await publishOk(url, eight, Buffer.from('s'));
    const six = tok(6);
    assert.equal((await retain(url, six)).status, 204);
    for (const offset of ['-1', tok(0), tok(5)]) {
        const res = await fetch(`${url}?offset=${offset}`);
        await expectError(res, 410, 'STREAM_GONE');
        assert.equal(res.headers.get(INC), token, `read at ${offset}`);
    }
    const lp = await fetch(`${url}?offset=${tok(1)}&live=long-poll`);
    await expectError(lp, 410, 'STREAM_GONE');
    const at = await fetch(`${url}?offset=${six}`);
    assert.equal(at.status, 200);
    assert.equal(await at.text(), 'gh');
    assert.equal(at.headers.get('stream-next-offset'), eight);
    // A retention request for a stream that does not exist.
    await expectError(await retain(streamUrl('ret-none'), tok(0)), 404, 'STREAM_NOT_FOUND');
});

// ---------------------------------------------------------------------------
// 3 bootstrap.

test('ext 3.2: bootstrap without a snapshot: Stream-Snapshot-Offset -1, an empty application/octet-stream first part, one part per JSON message', async () => {
    const url = streamUrl('bootjson');
    const { token } = await createStream(url, JSON_CT, '[{"a":1}, {"b" : [1, 2]}]');
    const tail = await append(url, '"three"', JSON_CT);
    const { res, parts } = await bootstrap(url);
    assert.equal(res.headers.get('stream-snapshot-offset'), '-1');
    assert.equal(res.headers.get('stream-next-offset'), tail);
    assert.equal(res.headers.get('stream-up-to-date'), 'true');
    assert.equal(res.headers.get(INC), token);
    assert.equal(parts.length, 4);
    assert.equal(parts[0].headers['content-type'], OCTET);
    assert.equal(parts[0].body.length, 0);
    assert.deepEqual(parts.slice(1).map((p) => p.body.toString()), ['{"a":1}\n', '{"b":[1,2]}\n', '"three"\n']);
    for (const p of parts.slice(1)) assert.equal(p.headers['content-type'], JSON_CT);
});

test('ext 3.2: bootstrap with a snapshot: the snapshot bytes and type first, then the updates after it; a binary stream in one part', async () => {
    const url = streamUrl('bootbin');
    await createStream(url, OCTET, Buffer.from([0, 1, 2, 13, 10, 45, 45]));
    const snapAt = await append(url, Buffer.from('more'));
    const snapBody = Buffer.concat([Buffer.from('\r\n--not-the-boundary\r\n'), randomBytes(3000)]);
    const digest = await publishOk(url, snapAt, snapBody, 'application/x-state');
    const tail = await append(url, Buffer.from('\r\nafter\n'));
    const { res, parts } = await bootstrap(url);
    assert.equal(res.headers.get('stream-snapshot-offset'), snapAt);
    assert.equal(res.headers.get('stream-next-offset'), tail);
    assert.equal(res.headers.get('stream-up-to-date'), 'true');
    assert.equal(parts.length, 2);
    assert.equal(parts[0].headers['content-type'], 'application/x-state');
    assert.ok(parts[0].body.equals(snapBody), 'snapshot part bytes');
    assert.equal(b3sum(digestInput('application/x-state', parts[0].body)), digest);
    assert.equal(parts[1].headers['content-type'], OCTET);
    assert.equal(parts[1].body.toString(), '\r\nafter\n');

    // A snapshot at the tail: only the snapshot part.
    const url2 = streamUrl('bootbin2');
    const { next } = await createStream(url2, OCTET, 'xyz');
    const cold = randomBytes(MiB + 3);
    await publishOk(url2, next, cold);
    const b2 = await bootstrap(url2);
    assert.equal(b2.res.headers.get('stream-snapshot-offset'), next);
    assert.equal(b2.res.headers.get('stream-next-offset'), next);
    assert.equal(b2.res.headers.get('stream-up-to-date'), 'true');
    assert.equal(b2.parts.length, 1);
    assert.ok(b2.parts[0].body.equals(cold), 'cold snapshot part bytes');
});

test('ext 3.2: every bootstrap answer uses a fresh boundary', async () => {
    const url = streamUrl('bootfresh');
    await createStream(url, OCTET, 'abc');
    const seen = new Set();
    for (let i = 0; i < 5; i++) {
        const { boundary } = await bootstrap(url);
        assert.ok(boundary.length >= 16, `boundary ${boundary} is long enough to be unpredictable`);
        seen.add(boundary);
    }
    assert.equal(seen.size, 5);
});

test('ext 3.1: bootstrap with any query parameter answers 400 QUERY_NOT_ACCEPTED; a missing stream 404', async () => {
    const url = streamUrl('bootq');
    await createStream(url, OCTET, 'abc');
    for (const q of ['?offset=-1', '?live=sse', '?live=long-poll', '?x=1', '?foo']) {
        const res = await fetch(`${url}/bootstrap${q}`);
        await expectError(res, 400, 'QUERY_NOT_ACCEPTED');
    }
    const missing = await fetch(`${streamUrl('boot-none')}/bootstrap`);
    await expectError(missing, 404, 'STREAM_NOT_FOUND');
    assert.equal(missing.headers.get(INC), null);
});

// ---------------------------------------------------------------------------
// Offsets, limits, preconditions, delete.

test('ext 2.2, 2.5: a snapshot or retention offset that is not 20 decimal digits answers 400 INVALID_OFFSET', async () => {
    const url = streamUrl('badoff');
    await createStream(url, OCTET, 'abc');
    for (const bad of ['abc', '-1', 'now', '3', '0000000000000000003', '000000000000000000003', '00000000000000000003x']) {
        await expectError(await publish(url, bad, Buffer.from('x')), 400, 'INVALID_OFFSET');
        await expectError(await getSnapshot(url, bad), 400, 'INVALID_OFFSET');
        await expectError(await retain(url, bad), 400, 'INVALID_OFFSET');
    }
    const h = await head(url);
    assert.equal(h.headers.get('stream-snapshot-offset'), null);
});

test('ext 2.2, 10: a 32 MiB snapshot is accepted; one byte more answers 413 REQUEST_TOO_LARGE naming Ursula-Max-Request-Bytes', async () => {
    const url = streamUrl('limit');
    const { next } = await createStream(url, OCTET, 'abc');
    const body = randomBytes(32 * MiB);
    const digest = await publishOk(url, next, body);
    assert.equal(digest, expectedDigest(OCTET, body));
    const back = await getSnapshot(url, next, { range: `bytes=${32 * MiB - 100}-` });
    assert.equal(back.status, 206);
    assert.ok(Buffer.from(await back.arrayBuffer()).equals(body.subarray(32 * MiB - 100)));
    // One byte more: the server answers from the head (and closes), so the
    // request goes over a raw connection that sends the head only.
    const conn = await RawConn.open(srv.port, srv.host);
    try {
        const target = new URL(`${url}/snapshot/${next}`).pathname;
        await conn.write(rawRequest('PUT', target, {
            headers: { 'Content-Type': OCTET, 'Content-Length': String(32 * MiB + 1) },
        }));
        const res = await conn.readResponse({ ms: 10_000 });
        assert.equal(res.status, 413, res.body.toString());
        assert.match(res.headers['content-type'] ?? '', /^application\/json\b/);
        assert.equal(JSON.parse(res.body.toString()).error.code, 'REQUEST_TOO_LARGE');
        assert.equal(res.headers['ursula-max-request-bytes'], String(32 * MiB));
    } finally {
        conn.destroy();
    }
    const h = await head(url);
    assert.equal(h.headers.get('stream-snapshot-digest'), digest, 'the 32 MiB snapshot stays the latest');
});

test('ext 2.4: Stream-Incarnation as a precondition on publish, snapshot read, retention and bootstrap: 412 on a mismatch, success on a match', async () => {
    const url = streamUrl('precond');
    const { next, token } = await createStream(url, OCTET, 'abcd');
    const other = { [INC]: String(Number(token) + 1) };
    const same = { [INC]: token };
    let res = await publish(url, next, Buffer.from('s'), OCTET, other);
    await expectError(res, 412, 'INCARNATION_MISMATCH');
    assert.equal(res.headers.get(INC), token);
    assert.equal((await head(url)).headers.get('stream-snapshot-offset'), null, 'the refused publish applied nothing');
    const digest = await (async () => {
        const r = await publish(url, next, Buffer.from('s'), OCTET, same);
        assert.equal(r.status, 204);
        return r.headers.get('stream-snapshot-digest');
    })();
    assert.ok(digest);
    res = await getSnapshot(url, next, other);
    await expectError(res, 412, 'INCARNATION_MISMATCH');
    assert.equal(res.headers.get(INC), token);
    assert.equal((await getSnapshot(url, next, same)).status, 200);
    // 416 comes before 412, and 304 after it.
    await expectError(await getSnapshot(url, next, { ...other, range: 'bytes=5-' }), 416, 'RANGE_NOT_SATISFIABLE');
    await expectError(await getSnapshot(url, next, { ...other, 'if-none-match': `"${digest}"` }), 412, 'INCARNATION_MISMATCH');
    res = await retain(url, tok(2), other);
    await expectError(res, 412, 'INCARNATION_MISMATCH');
    assert.equal((await head(url)).headers.get('stream-retained-offset'), tok(0));
    res = await retain(url, tok(2), same);
    assert.equal(res.status, 204);
    await expectError(await fetch(`${url}/bootstrap`, { headers: other }), 412, 'INCARNATION_MISMATCH');
    const boot = await fetch(`${url}/bootstrap`, { headers: same });
    assert.equal(boot.status, 200);
    await boot.arrayBuffer();
});

test('ext 2.4: a deleted and recreated stream has no snapshot and nothing retained; its cold snapshot object is removed', async () => {
    const url = streamUrl('recreate');
    const { next } = await createStream(url, OCTET, 'abcd');
    const body = randomBytes(MiB + 11);
    await publishOk(url, next, body);
    assert.equal((await retain(url, tok(2))).status, 204);
    assert.ok(heldAsObject(srv.dataDir, body));
    const del = await fetch(url, { method: 'DELETE' });
    assert.equal(del.status, 204);
    const { token } = await createStream(url, OCTET, 'abcdefgh');
    const h = await head(url);
    assert.equal(h.headers.get('stream-snapshot-offset'), null);
    assert.equal(h.headers.get('stream-snapshot-digest'), null);
    assert.equal(h.headers.get('stream-retained-offset'), tok(0));
    const old = await getSnapshot(url, next);
    await expectError(old, 404, 'SNAPSHOT_NOT_FOUND');
    assert.equal(old.headers.get(INC), token);
    const all = await fetch(`${url}?offset=-1`);
    assert.equal(await all.text(), 'abcdefgh');
    const deadline = Date.now() + 5000;
    while (heldAsObject(srv.dataDir, body) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    assert.ok(!heldAsObject(srv.dataDir, body), 'the deleted stream\'s snapshot object is garbage-collected');
});

// A JSON stream with a snapshot at about 1.2 MiB and about 10 MiB after it,
// waited on until the byte before the snapshot offset is in a cold chunk.
async function jsonStreamWithColdSnapshotPoint(prefix) {
    const url = streamUrl(prefix);
    const { token } = await createStream(url, JSON_CT);
    let id = 0;
    const batch = () => JSON.stringify(Array.from({ length: 20_000 }, () => ({ id: ++id, pad: 'p'.repeat(40) })));
    await append(url, batch(), JSON_CT);
    const snapAt = await tailOf(url);
    const snapBody = Buffer.from(JSON.stringify({ upto: id }));
    await publishOk(url, snapAt, snapBody, JSON_CT);
    for (let i = 0; i < 8; i++) await append(url, batch(), JSON_CT);
    const at = offsetNum(snapAt) - 1;
    const deadline = Date.now() + 10_000;
    while (!coldChunkRanges(srv.dataDir, token).some(([a, b]) => a <= at && at < b)) {
        assert.ok(Date.now() < deadline, 'the bytes before the snapshot offset were not flushed to the cold tier');
        await new Promise((r) => setTimeout(r, 50));
    }
    return { url, token, snapAt, snapBody, total: id, firstAfter: 20_001 };
}

test('ext 3.2, 3.3: a JSON bootstrap whose snapshot point is in the cold tier is complete or partial, and catch-up from Stream-Next-Offset returns the rest', async (t) => {
    const { url, snapAt, snapBody, total, firstAfter } = await jsonStreamWithColdSnapshotPoint('bootcold');
    const { res, parts } = await bootstrap(url);
    t.diagnostic(`bootstrap form: ${res.headers.get('stream-up-to-date') === 'true' ? 'complete' : 'partial'}, ` +
                 `${parts.length - 1} update parts`);
    assert.equal(res.headers.get('stream-snapshot-offset'), snapAt);
    assert.ok(parts[0].body.equals(snapBody));
    const next = res.headers.get('stream-next-offset');
    assert.ok(offsetNum(next) >= offsetNum(snapAt), 'Stream-Next-Offset is not below the snapshot point');
    const ids = [];
    for (const p of parts.slice(1)) ids.push(JSON.parse(p.body.toString()).id);
    if (res.headers.get('stream-up-to-date') !== 'true') {
        // Partial: the client reads on from Stream-Next-Offset.
        let offset = next;
        let pending = '';
        while (true) {
            const r = await fetch(`${url}?offset=${offset}`);
            assert.equal(r.status, 200);
            pending += await r.text();
            let lf;
            while ((lf = pending.indexOf('\n')) >= 0) {
                ids.push(JSON.parse(pending.slice(0, lf)).id);
                pending = pending.slice(lf + 1);
            }
            offset = r.headers.get('stream-next-offset');
            if (r.headers.get('stream-up-to-date') === 'true') break;
        }
        assert.equal(pending, '');
    }
    assert.equal(ids.length, total - firstAfter + 1, 'every message after the snapshot, once');
    assert.equal(ids[0], firstAfter);
    assert.equal(ids[ids.length - 1], total);
    assert.ok(ids.every((v, i) => i === 0 || v === ids[i - 1] + 1), 'in order, none skipped or repeated');
});

test('ext 2.2: retention to the latest snapshot offset of a JSON stream answers 204 after the bytes before it moved to the cold tier', async () => {
    const { url, token, snapAt } = await jsonStreamWithColdSnapshotPoint('retcold');
    // 503 invites a retry (2.2): a few, spaced out.
    let res;
    let text;
    for (let attempt = 0; attempt < 5; attempt++) {
        res = await retain(url, snapAt);
        text = await res.text();
        if (res.status !== 503) break;
        await new Promise((r) => setTimeout(r, 200));
    }
    assert.equal(res.status, 204, `retention: ${res.status} ${text}`);
    assert.equal(res.headers.get('stream-retained-offset'), snapAt);
    assert.equal(res.headers.get(INC), token);
    await expectError(await fetch(`${url}?offset=-1`), 410, 'STREAM_GONE');
});

test('ext 2.1, 2.2: retention below the snapshot point of a JSON stream, where the byte before it is cold, checks the boundary from the cold tier', async () => {
    const { url, token, snapAt } = await jsonStreamWithColdSnapshotPoint('retbelow');
    // The first message ends at its first LF: a boundary, in the cold tier.
    const head = await (await fetch(`${url}?offset=-1&max_bytes=200`)).text();
    const firstEnd = head.indexOf('\n') + 1;
    assert.ok(firstEnd > 0 && firstEnd < offsetNum(snapAt));
    await expectError(await retain(url, tok(firstEnd - 1)), 400, 'NOT_JSON_BOUNDARY');
    const res = await retain(url, tok(firstEnd));
    assert.equal(res.status, 204, await res.text());
    assert.equal(res.headers.get('stream-retained-offset'), tok(firstEnd));
    assert.equal(res.headers.get(INC), token);
    const after = await fetch(`${url}?offset=${tok(firstEnd)}&max_bytes=100`);
    assert.equal(after.status, 200);
    assert.match(await after.text(), /^\{"id":2,/);
});

// ---------------------------------------------------------------------------
// A client story: snapshot, retention, and a client that rebuilds from bootstrap.

// A client's state: the count of messages and the sum of their v fields.
function applyMessage(state, msg) {
    state.count += 1;
    state.sum += msg.v;
    state.lastId = msg.id;
}

// Catch-up reads from `offset` until Stream-Up-To-Date; NDJSON lines, an
// incomplete trailing line buffered until the rest arrives.
async function catchUp(url, offset, state) {
    let pending = '';
    let reads = 0;
    while (true) {
        const res = await fetch(`${url}?offset=${offset}`);
        const text = await res.text();
        assert.equal(res.status, 200, `read at ${offset}: ${text}`);
        reads += 1;
        pending += text;
        let lf;
        while ((lf = pending.indexOf('\n')) >= 0) {
            applyMessage(state, JSON.parse(pending.slice(0, lf)));
            pending = pending.slice(lf + 1);
        }
        const next = res.headers.get('stream-next-offset');
        assert.ok(offset === '-1' || offsetNum(next) >= offsetNum(offset), 'offsets move forward');
        offset = next;
        if (res.headers.get('stream-up-to-date') === 'true') break;
        assert.ok(reads < 1000, 'too many catch-up reads');
    }
    assert.equal(pending, '', 'no partial message at the tail');
    return offset;
}

test('ext 2.2, 3: a client story: 10,000 messages, a snapshot summary, retention, and a new client that bootstraps to the same state', async (t) => {
    const url = streamUrl('story');
    const { token } = await createStream(url, JSON_CT);
    let id = 0;
    const message = () => {
        id += 1;
        return { id, v: (id * 7919) % 1000, tag: `m${id}` };
    };
    const batch = (n) => JSON.stringify(Array.from({ length: n }, message));
    for (let b = 0; b < 20; b++) await append(url, batch(500), JSON_CT);
    const snapAt = await tailOf(url);

    // The writer's summary of [start, snapAt), from a full read.
    const summary = { count: 0, sum: 0, lastId: 0 };
    await catchUp(url, '-1', summary);
    assert.equal(summary.count, 10_000);
    const snapBody = Buffer.from(JSON.stringify(summary));
    const digest = await publishOk(url, snapAt, snapBody, JSON_CT);

    await append(url, batch(100), JSON_CT);
    await append(url, batch(100), JSON_CT);

    // An old client reads everything before retention.
    const old = { count: 0, sum: 0, lastId: 0 };
    const oldOffset = await catchUp(url, '-1', old);
    assert.equal(old.count, 10_200);
    assert.equal(old.lastId, 10_200);

    const r = await retain(url, snapAt);
    assert.equal(r.status, 204);
    assert.equal(r.headers.get('stream-retained-offset'), snapAt);

    // (a) Readers of the beginning or of an offset below the snapshot: 410.
    for (const offset of ['-1', tok(0), tok(offsetNum(snapAt) - 1), tok(Math.floor(offsetNum(snapAt) / 2))]) {
        const res = await fetch(`${url}?offset=${offset}`);
        await expectError(res, 410, 'STREAM_GONE');
        assert.equal(res.headers.get(INC), token);
    }

    // (b) A new client bootstraps: the snapshot, then the parts, then catch-up.
    const { res, parts } = await bootstrap(url);
    assert.equal(res.headers.get('stream-snapshot-offset'), snapAt);
    assert.equal(parts[0].headers['content-type'], JSON_CT);
    assert.equal(b3sum(digestInput(JSON_CT, parts[0].body)), digest);
    const fresh = JSON.parse(parts[0].body.toString());
    assert.equal(fresh.count, 10_000);
    for (const p of parts.slice(1)) {
        assert.equal(p.headers['content-type'], JSON_CT);
        const text = p.body.toString();
        assert.ok(text.endsWith('\n') && text.indexOf('\n') === text.length - 1, `one message per part: ${text}`);
        applyMessage(fresh, JSON.parse(text));
    }
    const complete = res.headers.get('stream-up-to-date') === 'true';
    t.diagnostic(`bootstrap form: ${complete ? 'complete' : 'partial'}, ${parts.length - 1} update parts`);
    if (complete) assert.equal(parts.length, 201, 'a complete bootstrap holds the 200 updates');
    let freshOffset = await catchUp(url, res.headers.get('stream-next-offset'), fresh);
    assert.deepEqual(fresh, old, 'the bootstrapped client has the state of the client that read everything');
    assert.equal(freshOffset, oldOffset);

    // Both go on from their offsets after more writes.
    await append(url, batch(50), JSON_CT);
    freshOffset = await catchUp(url, freshOffset, fresh);
    await catchUp(url, oldOffset, old);
    assert.deepEqual(fresh, old);
    assert.equal(fresh.count, 10_250);
});

// ---------------------------------------------------------------------------
// Durability.

test('ext 2.2, 2.4, 2.5: inline and cold snapshots and the retained offset survive kill -9 (WAL replay and checkpoint)', async () => {
    let dur = await startServer({ memory: false });
    // A server restarted twice no longer removes its data dir on stop().
    const dataDir = dur.dataDir;
    try {
        const base = dur.url;
        const url = (name) => `${base}/bkt-snap/${name}`;
        // An inline snapshot on a binary stream, retention below it.
        const a = url(uniq('crash-inline'));
        await createStream(a, OCTET, 'abcdefgh');
        const aSnapAt = await append(a, 'ijkl');
        const aBody = Buffer.from('inline snapshot body');
        const aDigest = await publishOk(a, aSnapAt, aBody, 'application/x-inline');
        assert.equal((await retain(a, tok(6))).status, 204);
        await append(a, 'mnop');
        // A cold snapshot on a stream large enough to have flushed chunks;
        // retention inside a chunk.
        const b = url(uniq('crash-cold'));
        const data = randomBytes(10 * MiB + 321);
        await createStream(b, OCTET, data.subarray(0, 3 * MiB));
        await append(b, data.subarray(3 * MiB, 7 * MiB));
        const bSnapAt = await append(b, data.subarray(7 * MiB));
        const bBody = randomBytes(2 * MiB + 9);
        const bDigest = await publishOk(b, bSnapAt, bBody, 'application/x-cold');
        const bRetained = tok(6 * MiB + 17);
        assert.equal((await retain(b, bRetained)).status, 204);
        // A JSON stream with a snapshot and retention at a message boundary.
        const c = url(uniq('crash-json'));
        await createStream(c, JSON_CT, '[{"i":1},{"i":2},{"i":3}]');
        const cBody = Buffer.from('{"upto":3}');
        const cDigest = await publishOk(c, tok(24), cBody, JSON_CT);
        assert.equal((await retain(c, tok(8))).status, 204);

        const expectations = [
            { u: a, snapAt: aSnapAt, digest: aDigest, body: aBody, ct: 'application/x-inline', retained: tok(6),
              below: tok(5), atRetained: 'ghijklmnop' },
            { u: b, snapAt: bSnapAt, digest: bDigest, body: bBody, ct: 'application/x-cold', retained: bRetained,
              below: tok(6 * MiB + 16), atRetainedBytes: data.subarray(6 * MiB + 17) },
            { u: c, snapAt: tok(24), digest: cDigest, body: cBody, ct: JSON_CT, retained: tok(8),
              below: tok(0), atRetained: '{"i":2}\n{"i":3}\n' },
        ];
        const heads = {};
        for (const e of expectations) {
            const h = await head(e.u);
            heads[e.u] = { inc: h.headers.get(INC), next: h.headers.get('stream-next-offset') };
        }

        const check = async (when) => {
            for (const e of expectations) {
                const h = await head(e.u);
                assert.equal(h.status, 200, `${when}: HEAD ${e.u}`);
                assert.equal(h.headers.get('stream-snapshot-offset'), e.snapAt, `${when}: snapshot offset`);
                assert.equal(h.headers.get('stream-snapshot-digest'), e.digest, `${when}: snapshot digest`);
                assert.equal(h.headers.get('stream-retained-offset'), e.retained, `${when}: retained offset`);
                assert.equal(h.headers.get(INC), heads[e.u].inc, `${when}: incarnation`);
                assert.equal(h.headers.get('stream-next-offset'), heads[e.u].next, `${when}: tail`);

                const s = await getSnapshot(e.u, e.snapAt);
                const got = Buffer.from(await s.arrayBuffer());
                assert.equal(s.status, 200, `${when}: snapshot read`);
                assert.equal(s.headers.get('content-type'), e.ct, `${when}: snapshot type`);
                assert.equal(s.headers.get('stream-snapshot-digest'), e.digest);
                assert.ok(got.equals(e.body), `${when}: snapshot bytes of ${e.u}`);
                assert.equal(b3sum(digestInput(e.ct, got)), e.digest, `${when}: b3sum of the bytes read back`);

                const range = await getSnapshot(e.u, e.snapAt, { range: 'bytes=3-9' });
                assert.equal(range.status, 206);
                assert.ok(Buffer.from(await range.arrayBuffer()).equals(e.body.subarray(3, 10)), `${when}: range`);

                for (const offset of ['-1', e.below]) {
                    const gone = await fetch(`${e.u}?offset=${offset}`);
                    await expectError(gone, 410, 'STREAM_GONE');
                    assert.equal(gone.headers.get(INC), heads[e.u].inc);
                }
                // The bytes from the retained offset on.
                let offset = e.retained;
                const chunks = [];
                while (true) {
                    const r = await fetch(`${e.u}?offset=${offset}`);
                    assert.equal(r.status, 200, `${when}: read at ${offset}`);
                    chunks.push(Buffer.from(await r.arrayBuffer()));
                    offset = r.headers.get('stream-next-offset');
                    if (r.headers.get('stream-up-to-date') === 'true') break;
                }
                const all = Buffer.concat(chunks);
                if (e.atRetainedBytes) assert.ok(all.equals(e.atRetainedBytes), `${when}: bytes from the retained offset`);
                else assert.equal(all.toString(), e.atRetained, `${when}: bytes from the retained offset`);

                const boot = await bootstrap(e.u);
                assert.equal(boot.res.headers.get('stream-snapshot-offset'), e.snapAt);
                assert.ok(boot.parts[0].body.equals(e.body), `${when}: bootstrap snapshot part`);
            }
        };

        await check('before the crash');
        dur = await dur.crashAndRestart();
        await check('after kill -9 (WAL replay)');
        // A newer snapshot and retention after the restart, then an idle
        // checkpoint (the sweep runs every 5 s), then another crash.
        const aSnap2 = await tailOf(a);
        const aBody2 = randomBytes(MiB + 1);  // cold now
        const aDigest2 = await publishOk(a, aSnap2, aBody2, 'application/x-inline');
        assert.equal((await retain(a, aSnapAt)).status, 204);
        Object.assign(expectations[0], { snapAt: aSnap2, digest: aDigest2, body: aBody2, retained: aSnapAt,
                                         below: tok(offsetNum(aSnapAt) - 1), atRetained: 'mnop' });
        const t0 = Date.now();
        const ckptDir = path.join(dur.dataDir, 'checkpoints');
        const deadline = t0 + 10_000;
        while (!filesUnder(ckptDir).some((f) => f.mtimeMs > t0)) {
            assert.ok(Date.now() < deadline, 'no checkpoint was written within 10 s of the last write');
            await new Promise((r) => setTimeout(r, 100));
        }
        await new Promise((r) => setTimeout(r, 500));  // the other groups' sweeps of the same round
        dur = await dur.crashAndRestart();
        await check('after a checkpoint and a second kill -9');
        // The superseded snapshot is gone.
        await expectError(await getSnapshot(a, aSnapAt), 404, 'SNAPSHOT_NOT_FOUND');
    } finally {
        await dur.stop();
        rmSync(dataDir, { recursive: true, force: true });
    }
});
