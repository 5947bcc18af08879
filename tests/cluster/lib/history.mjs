// The history checker of the cluster tests: writers append bodies
// `w<writer>-<seq>;` (unique across the test), each seq only once the one
// before is acknowledged, repeating a write in doubt with the same producer
// key. A stream read back must then hold, for each writer, its seqs
// 0, 1, 2, ... in order, each once: every acknowledged seq present, at most
// one more (the write in doubt when the writer stopped), nothing else.

export const token = (writer, seq) => `w${writer}-${seq};`;

// A writer's record: `acked` counts its acknowledged seqs (0 .. acked-1),
// `inDoubt` is the seq sent but not acknowledged when it stopped, or null.
export function newWriter(name, stream) {
    return { name, stream, acked: 0, inDoubt: null, seq: 0 };
}

// Problems of the bytes `text` of one stream written by `writers` (records of
// newWriter() whose `stream` is this one): a list of strings, empty when the
// history is right.
// The bodies of `text`, by writer: each writer's seqs in stream order, and
// the problems of bodies no writer of `writers` wrote or a cut last body.
function seqsByWriter(text, writers, what) {
    const problems = [];
    const seen = new Map(writers.map((w) => [String(w.name), []]));
    if (text.length && !text.endsWith(';')) problems.push(`the ${what} ends inside a body: ...${JSON.stringify(text.slice(-40))}`);
    const parts = text.split(';');
    parts.pop();
    for (const [i, t] of parts.entries()) {
        const m = /^w([^-;]+)-(\d+)$/.exec(t);
        if (!m || !seen.has(m[1])) {
            problems.push(`body ${i} ${JSON.stringify(t.slice(0, 40))} was written by no writer of this stream`);
            continue;
        }
        seen.get(m[1]).push(Number(m[2]));
    }
    return { seen, problems };
}

// Whether `seqs` is 0, 1, 2, ... once each; else the problem.
function orderProblem(name, seqs) {
    for (let k = 0; k < seqs.length; k++) {
        if (seqs[k] !== k) {
            const dup = seqs.indexOf(seqs[k]) !== k;
            return `writer ${name}: position ${k} holds seq ${seqs[k]}` +
                   (dup ? ' a second time (duplicate)' : ' (out of order or a seq lost before it)');
        }
    }
    return null;
}

export function checkHistory(text, writers, { limit = 20 } = {}) {
    const { seen, problems } = seqsByWriter(text, writers, 'stream');
    for (const w of writers) {
        const seqs = seen.get(String(w.name));
        const allowed = w.acked + (w.inDoubt === w.acked ? 1 : 0);
        const order = orderProblem(w.name, seqs);
        if (order) problems.push(order);
        if (seqs.length < w.acked) {
            problems.push(`writer ${w.name}: ${w.acked} writes acknowledged, ${seqs.length} in the stream ` +
                          `(lost: seqs ${seqs.length}..${w.acked - 1} missing or misplaced)`);
        } else if (seqs.length > allowed) {
            problems.push(`writer ${w.name}: ${seqs.length} writes in the stream, at most ${allowed} possible ` +
                          `(${w.acked} acknowledged, in doubt: ${w.inDoubt})`);
        }
    }
    return problems.slice(0, limit);
}

// Problems of one read of a stream (the bytes `text`, read while the writers
// went on): as checkHistory, except that a writer's later writes may be
// missing, not the ones it had acknowledged before the read began.
// `ackedAtStart[i]` is writers[i].acked when the read's first request was
// sent, `bound[i]` the most writes of writers[i] the stream could hold when
// its last answer came (its acknowledged ones, plus the one in flight).
// The read must hold, for each writer, its seqs 0 .. k-1 in order, each once,
// with ackedAtStart[i] <= k <= bound[i]: a linearizable read reflects every
// write acknowledged before it started.
export function checkRead(text, writers, ackedAtStart, bound, { limit = 20 } = {}) {
    const { seen, problems } = seqsByWriter(text, writers, 'read');
    for (const [i, w] of writers.entries()) {
        const seqs = seen.get(String(w.name));
        const order = orderProblem(w.name, seqs);
        if (order) problems.push(order);
        if (seqs.length < ackedAtStart[i]) {
            problems.push(`writer ${w.name}: ${ackedAtStart[i]} writes acknowledged before the read began, ` +
                          `${seqs.length} in it (stale read: seqs ${seqs.length}..${ackedAtStart[i] - 1} missing)`);
        } else if (seqs.length > bound[i]) {
            problems.push(`writer ${w.name}: ${seqs.length} writes in the read, at most ${bound[i]} possible`);
        }
    }
    return problems.slice(0, limit);
}
