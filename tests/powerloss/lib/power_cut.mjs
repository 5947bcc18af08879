// The power cut of the power-loss test: with the server killed, puts its data
// dir back to what the shim's model says survived (README.md, shim.c), and
// empties the model so that the next start takes that as durable.
import { copyFileSync, existsSync, lstatSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync }
    from 'node:fs';
import path from 'node:path';

// The files in `dir` now: Map(path -> size).
function files(dir) {
    const out = new Map();
    for (const rel of readdirSync(dir, { recursive: true })) {
        const st = lstatSync(path.join(dir, rel));
        if (st.isFile()) out.set(rel, st.size);
    }
    return out;
}

// Returns what the cut undid: unsyncedBytes, the bytes written past the
// synced end of files that survive (unsynced overwrites, as in a prepared WAL
// segment, are undone but not counted); filesDropped, files whose name was never synced
// (created or renamed into place); filesRestored, files whose removal was
// never synced (a WAL segment or an old checkpoint unlinked, say).
export function cutPower(dataDir, stateDir) {
    const before = files(dataDir);
    const entries = readFileSync(path.join(stateDir, 'entries'), 'latin1').split('\n').filter(Boolean)
        .map((line) => {
            const [kind, id, ...rest] = line.split(' ');
            return { kind, id, path: rest.join(' ') };
        })
        // Parents before children.
        .sort((a, b) => a.path.split('/').length - b.path.split('/').length);

    rmSync(dataDir, { recursive: true, force: true });
    mkdirSync(dataDir);
    const after = { files: new Map(), dirs: new Set() };
    for (const e of entries) {
        const parent = path.dirname(e.path);
        if (parent !== '.' && !after.dirs.has(parent)) continue;  // its directory did not survive
        const target = path.join(dataDir, e.path);
        if (e.kind === 'd') {
            mkdirSync(target);
            after.dirs.add(e.path);
            continue;
        }
        const content = path.join(stateDir, 'content', e.id);
        if (existsSync(content)) {
            copyFileSync(content, target);
        } else {
            writeFileSync(target, '');  // its name was synced, its bytes never
        }
        after.files.set(e.path, lstatSync(target).size);
    }
    rmSync(stateDir, { recursive: true, force: true });
    mkdirSync(stateDir);

    let unsyncedBytes = 0;
    let filesDropped = 0;
    for (const [rel, size] of before) {
        if (after.files.has(rel)) unsyncedBytes += Math.max(0, size - after.files.get(rel));
        else filesDropped++;
    }
    const filesRestored = [...after.files.keys()].filter((rel) => !before.has(rel)).length;
    return { unsyncedBytes, filesDropped, filesRestored };
}
