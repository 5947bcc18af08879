// A strict reader of the Prometheus text exposition format 0.0.4, for the
// metrics tests: it throws on anything a scraper could misread.
//
//   const m = parsePrometheus(text);
//   m.families.get('dstream_appends_total')  // {name, type, help, samples: [{name, labels, value}]}
//   value(m, 'dstream_streams')              // the sample with exactly these labels
//   total(m, 'dstream_http_requests_total', { route: 'append' })  // sum of matching samples

const METRIC_NAME = /^[a-zA-Z_:][a-zA-Z0-9_:]*$/;
const LABEL_NAME = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
const FLOAT = /^(?:[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?|NaN|[+-]Inf)$/;
const TYPES = new Set(['counter', 'gauge', 'histogram', 'summary', 'untyped']);

function parseFloatStrict(text, where) {
    if (!FLOAT.test(text)) throw new Error(`${where}: bad value ${JSON.stringify(text)}`);
    if (text === 'NaN') return NaN;
    if (text === '+Inf') return Infinity;
    if (text === '-Inf') return -Infinity;
    return Number(text);
}

// `{a="x",b="y"}` at `line[at]`; returns {labels, end} (end: after the brace).
function parseLabels(line, at, where) {
    const labels = {};
    let i = at + 1;
    while (true) {
        if (line[i] === '}') return { labels, end: i + 1 };
        const eq = line.indexOf('=', i);
        if (eq < 0) throw new Error(`${where}: label without '='`);
        const name = line.slice(i, eq);
        if (!LABEL_NAME.test(name) || name.startsWith('__')) {
            throw new Error(`${where}: bad label name ${JSON.stringify(name)}`);
        }
        if (name in labels) throw new Error(`${where}: label ${name} repeated`);
        if (line[eq + 1] !== '"') throw new Error(`${where}: label value of ${name} is not quoted`);
        let value = '';
        let j = eq + 2;
        for (; j < line.length && line[j] !== '"'; j++) {
            if (line[j] !== '\\') {
                value += line[j];
                continue;
            }
            const next = line[++j];
            if (next === '\\') value += '\\';
            else if (next === '"') value += '"';
            else if (next === 'n') value += '\n';
            else throw new Error(`${where}: bad escape \\${next} in label ${name}`);
        }
        if (j >= line.length) throw new Error(`${where}: unterminated value of label ${name}`);
        labels[name] = value;
        i = j + 1;
        if (line[i] === ',') i++;
        else if (line[i] !== '}') throw new Error(`${where}: expected ',' or '}' after label ${name}`);
    }
}

// The family a sample name belongs to, given the family being read.
function familyOf(name, current) {
    if (!current) return null;
    if (name === current.name) return current.type === 'histogram' ? null : current;
    if (current.type === 'histogram' &&
        [`${current.name}_bucket`, `${current.name}_sum`, `${current.name}_count`].includes(name)) {
        return current;
    }
    return null;
}

const seriesKey = (name, labels) =>
    name + JSON.stringify(Object.entries(labels).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)));

function checkHistogram(family) {
    const groups = new Map();
    for (const s of family.samples) {
        const { le, ...rest } = s.labels;
        const key = JSON.stringify(Object.entries(rest).sort());
        if (!groups.has(key)) groups.set(key, { buckets: [], sum: undefined, count: undefined });
        const g = groups.get(key);
        if (s.name.endsWith('_bucket')) {
            if (le === undefined) throw new Error(`${family.name}: bucket without le`);
            g.buckets.push({ le: parseFloatStrict(le, `${family.name} le`), value: s.value });
        } else if (le !== undefined) {
            throw new Error(`${s.name}: le on a _sum or _count sample`);
        } else if (s.name.endsWith('_sum')) {
            g.sum = s.value;
        } else {
            g.count = s.value;
        }
    }
    for (const [key, g] of groups) {
        const where = `${family.name}${key}`;
        if (g.buckets.length === 0) throw new Error(`${where}: no buckets`);
        for (let i = 0; i < g.buckets.length; i++) {
            const b = g.buckets[i];
            if (!Number.isInteger(b.value) || b.value < 0) throw new Error(`${where}: bucket count ${b.value}`);
            if (i > 0 && !(b.le > g.buckets[i - 1].le)) throw new Error(`${where}: le not increasing at ${b.le}`);
            if (i > 0 && b.value < g.buckets[i - 1].value) {
                throw new Error(`${where}: buckets not cumulative at le=${b.le}`);
            }
        }
        const last = g.buckets[g.buckets.length - 1];
        if (last.le !== Infinity) throw new Error(`${where}: the last bucket is not le="+Inf"`);
        if (g.sum === undefined || g.count === undefined) throw new Error(`${where}: _sum or _count missing`);
        if (g.count !== last.value) throw new Error(`${where}: _count ${g.count} != +Inf bucket ${last.value}`);
    }
}

export function parsePrometheus(text) {
    if (text.length > 0 && !text.endsWith('\n')) throw new Error('the exposition does not end with a line feed');
    const families = new Map();
    const series = new Set();
    let current = null;
    const lines = text.split('\n');
    lines.pop();
    lines.forEach((line, n) => {
        const where = `line ${n + 1} ${JSON.stringify(line.slice(0, 120))}`;
        if (line.startsWith('#')) {
            const m = /^# (HELP|TYPE) (\S+) ?(.*)$/.exec(line);
            if (!m) return;  // a plain comment
            const [, kind, name, rest] = m;
            if (!METRIC_NAME.test(name)) throw new Error(`${where}: bad metric name`);
            let family = families.get(name);
            if (family && family !== current) throw new Error(`${where}: family ${name} is not contiguous`);
            if (!family) {
                family = { name, type: 'untyped', help: undefined, samples: [], typed: false };
                families.set(name, family);
                current = family;
            }
            if (kind === 'HELP') {
                if (family.help !== undefined) throw new Error(`${where}: second HELP`);
                if (/\\[^\\n]/.test(rest.replace(/\\\\/g, ''))) throw new Error(`${where}: bad escape in HELP`);
                family.help = rest.replace(/\\(\\|n)/g, (_, c) => (c === 'n' ? '\n' : '\\'));
            } else {
                if (family.typed || family.samples.length > 0) throw new Error(`${where}: TYPE too late or twice`);
                if (!TYPES.has(rest)) throw new Error(`${where}: unknown type ${rest}`);
                family.type = rest;
                family.typed = true;
            }
            return;
        }
        if (line === '') throw new Error(`${where}: empty line`);
        const nameEnd = line.search(/[{ ]/);
        if (nameEnd <= 0) throw new Error(`${where}: no value`);
        const name = line.slice(0, nameEnd);
        if (!METRIC_NAME.test(name)) throw new Error(`${where}: bad metric name`);
        let labels = {};
        let at = nameEnd;
        if (line[at] === '{') ({ labels, end: at } = parseLabels(line, at, where));
        if (line[at] !== ' ') throw new Error(`${where}: expected one space before the value`);
        const fields = line.slice(at + 1).split(' ');
        if (fields.length > 2 || fields.some((f) => f === '')) throw new Error(`${where}: bad spacing`);
        const value = parseFloatStrict(fields[0], where);
        if (fields.length === 2 && !/^-?\d+$/.test(fields[1])) throw new Error(`${where}: bad timestamp`);
        const family = familyOf(name, current);
        if (!family || !family.typed) throw new Error(`${where}: sample outside its typed family`);
        const key = seriesKey(name, labels);
        if (series.has(key)) throw new Error(`${where}: series repeated`);
        series.add(key);
        if (family.type === 'counter') {
            if (!name.endsWith('_total')) throw new Error(`${where}: a counter's name ends in _total`);
            if (!(value >= 0)) throw new Error(`${where}: negative counter`);
        }
        family.samples.push({ name, labels, value });
    });
    for (const family of families.values()) {
        if (!family.typed) throw new Error(`family ${family.name} has no TYPE`);
        if (family.type === 'histogram') checkHistogram(family);
    }
    return { families };
}

function labelsEqual(a, b) {
    const ka = Object.keys(a);
    return ka.length === Object.keys(b).length && ka.every((k) => a[k] === b[k]);
}

// The value of the sample `name` with exactly `labels`; undefined when absent.
export function value(parsed, name, labels = {}) {
    for (const family of parsed.families.values()) {
        for (const s of family.samples) {
            if (s.name === name && labelsEqual(s.labels, labels)) return s.value;
        }
    }
    return undefined;
}

// The sum of the samples `name` whose labels include `match` (0 when none).
export function total(parsed, name, match = {}) {
    let sum = 0;
    for (const family of parsed.families.values()) {
        for (const s of family.samples) {
            if (s.name === name && Object.entries(match).every(([k, v]) => s.labels[k] === v)) sum += s.value;
        }
    }
    return sum;
}
