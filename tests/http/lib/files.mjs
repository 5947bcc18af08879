// What a durable server keeps on disk, for tests that check its cold tier.
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';

// The files below `dir` (recursively) with their sizes; none when it is absent.
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
            if (e.isDirectory()) walk(p);
            else if (e.isFile()) out.push({ path: p, size: statSync(p).size });
        }
    };
    walk(dir);
    return out;
}
