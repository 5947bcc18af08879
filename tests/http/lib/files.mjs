// What a durable server keeps on disk, for tests that check its cold tier.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';

// The files below `dir` (recursively) with their sizes and modification
// times; none when it is absent. A file renamed or removed while the server
// runs (a temporary one) is left out.
export function filesUnder(dir) {
    const out = [];
    const walk = (d) => {
        let entries;
        try {
            entries = readdirSync(d, { withFileTypes: true });
        } catch {
            return;
        }
        for (const e of entries) {
            const p = path.join(d, e.name);
            if (e.isDirectory()) {
                walk(p);
            } else if (e.isFile()) {
                const st = statSync(p, { throwIfNoEntry: false });
                if (st) out.push({ path: p, size: st.size, mtimeMs: st.mtimeMs });
            }
        }
    };
    walk(dir);
    return out;
}

// A listed file's bytes, or null when it was removed since the listing (the
// server's garbage collection runs while tests look).
export function readIfPresent(file) {
    try {
        return readFileSync(file);
    } catch (e) {
        if (e.code === 'ENOENT') return null;
        throw e;
    }
}

// Where the suite's servers keep their cold tier: their data dir's
// objects/, or, when the suite runs with `--cold-store s3://BUCKET/PREFIX` in
// DSTREAM_TEST_SERVER_ARGS against s3rver (DSTREAM_TEST_S3_DIRECTORY), the
// bucket, read from s3rver's own files.
export function coldStoreOfSuite() {
    const m = /--cold-store[ =]s3:\/\/([^/\s]+)\/?(\S*)/.exec(process.env.DSTREAM_TEST_SERVER_ARGS ?? '');
    if (!m) return null;
    const directory = process.env.DSTREAM_TEST_S3_DIRECTORY;
    if (!directory) throw new Error('an S3 cold store in DSTREAM_TEST_SERVER_ARGS needs DSTREAM_TEST_S3_DIRECTORY (tests/s3/with_s3rver.sh)');
    return { bucket: m[1], prefix: m[2].replace(/\/+$/, ''), directory };
}

// s3rver keeps an object KEY as the file KEY._S3rver_object (and metadata beside it).
const S3RVER_OBJECT = '._S3rver_object';

// The node's own part of the store: PREFIX/<its cluster id> (docs/disk-format.md).
function nodeRoot(s3, dataDir) {
    const meta = readFileSync(path.join(dataDir, 'node.meta'), 'utf8');
    const clusterId = /^cluster_id (\S+)$/m.exec(meta)?.[1];
    if (!clusterId) throw new Error(`${dataDir}/node.meta names no cluster_id`);
    return [...s3.prefix.split('/').filter(Boolean), clusterId].join('/');
}

// How many objects under `sub` the server on `dataDir` is writing and has
// not finished: its temporary files in a local store; in S3 the multipart
// uploads open (s3rver keeps each as ._S3rver_uploads/<id>/, the key in a
// file there; a smaller object goes up whole and is never seen so).
export function objectsBeingWritten(dataDir, sub) {
    const s3 = coldStoreOfSuite();
    if (!s3) {
        return filesUnder(path.join(dataDir, 'objects', sub)).filter((f) => f.path.endsWith('.tmp')).length;
    }
    const under = `${nodeRoot(s3, dataDir)}/${sub}`;
    return filesUnder(path.join(s3.directory, s3.bucket, '._S3rver_uploads'))
        .filter((f) => path.basename(f.path) === 'key')
        .filter((f) => {
            try { return readFileSync(f.path, 'utf8').startsWith(under); } catch { return false; }
        }).length;
}

// The cold-tier objects of the server on `dataDir` whose keys start with
// `sub` ('chunks', 'snapshots', ...), as files: [{path, key, size, mtimeMs}],
// `key` relative to the node's own part of the store.
export function coldObjects(dataDir, sub = '') {
    const s3 = coldStoreOfSuite();
    if (!s3) {
        const root = path.join(dataDir, 'objects');
        return filesUnder(path.join(root, sub)).map((f) => ({ ...f, key: path.relative(root, f.path) }));
    }
    const root = path.join(s3.directory, s3.bucket, ...nodeRoot(s3, dataDir).split('/'));
    return filesUnder(path.join(root, sub))
        .filter((f) => f.path.endsWith(S3RVER_OBJECT))
        .map((f) => ({ ...f, key: path.relative(root, f.path).slice(0, -S3RVER_OBJECT.length) }));
}
