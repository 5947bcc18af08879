// What a durable server keeps on disk, for tests that check its cold tier.
import { readdirSync, statSync } from 'node:fs';
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
