#!/usr/bin/env node
// Summarises bench/compare.sh results as markdown: medians per server and the
// dstream / reference ratios, with the columns of the scenario that ran.
//
//   node bench/load/compare-table.mjs RESULTS.jsonl
//
// Each line of RESULTS.jsonl: {"server":NAME,"round":N,"rc":EXIT,"result":<dstream-bench JSON or null>}
// and, with compare.sh --perf-stat, "perf":<bench/load/perf-counts.mjs object or null>;
// "cpu_speed": the `dstream-bench cpu-speed` line taken just before the run, or null.
import { readFileSync } from "node:fs";

const file = process.argv[2];
if (!file) {
    console.error("usage: compare-table.mjs RESULTS.jsonl");
    process.exit(2);
}
const rows = readFileSync(file, "utf8")
    .split("\n")
    .filter((l) => l.trim() !== "")
    .map((l) => JSON.parse(l));

const order = [];
const byServer = new Map();
for (const r of rows) {
    if (!byServer.has(r.server)) {
        byServer.set(r.server, []);
        order.push(r.server);
    }
    byServer.get(r.server).push(r);
}

const median = (xs) => {
    const v = xs.filter((x) => typeof x === "number" && Number.isFinite(x)).sort((a, b) => a - b);
    if (v.length === 0) return NaN;
    const m = Math.floor(v.length / 2);
    return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};
const fmt = (x, digits = 0) => (Number.isFinite(x) ? x.toFixed(digits) : "n/a");
// Per-operation counts run from 0.001 (futex per delivery) to thousands.
const significant = (x) => {
    if (!Number.isFinite(x)) return "n/a";
    if (x === 0) return "0";
    return x >= 1000 ? thousands(x) : x.toPrecision(3);
};
const times = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? `${(a / b).toFixed(2)}x` : "n/a");
const thousands = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "n/a");
const ms = (us) => us / 1000;
const mib = (kib) => (kib ?? NaN) / 1024;

// The columns every scenario ends with.
const serverColumns = (op) => [
    { label: `server CPU µs/${op}`, ratio: `server CPU µs/${op}`, digits: 1, pick: (j) => j[`server_cpu_us_per_${op}`] },
    { label: "server CPU cores", digits: 2, pick: (j) => j.server_cpu_cores },
    { label: "server peak RSS MiB", ratio: "server peak RSS", digits: 1, pick: (j) => mib(j.server_rss_peak_kib) },
];
const generatorColumn = { label: "generator CPU cores", digits: 2, pick: (j) => j.client_cpu_cores };
const deliveryColumns = [
    { label: "deliveries/s", ratio: "deliveries/s", format: thousands, pick: (j) => j.deliveries_per_s },
    // Below the asked rate when the server answered appends too slowly.
    { label: "messages/s written", digits: 1, pick: (j) => j.messages_per_s },
    { label: "writer lag max ms", digits: 0, pick: (j) => j.writer_max_lag_ms },
    { label: "p50 ms", ratio: "p50", digits: 2, pick: (j) => ms(j.latency_us?.p50) },
    { label: "p99 ms", ratio: "p99", digits: 2, pick: (j) => ms(j.latency_us?.p99) },
    { label: "p99.9 ms", digits: 2, pick: (j) => ms(j.latency_us?.p999) },
    ...serverColumns("delivery"),
    { label: "missed", sum: true, pick: (j) => j.missed },
    { label: "duplicates", sum: true, pick: (j) => j.duplicates },
    {
        label: "errors",
        sum: true,
        pick: (j) => j.write_errors + j.write_transport_errors + j.writes_unanswered + j.read_errors,
    },
    generatorColumn,
];
// compare.sh --perf-stat: the server's calls per operation, from the run's
// `perf` object (picks get the dstream-bench result and the whole row).
const perfColumns = (op) => [
    { label: `syscalls/${op}`, ratio: `syscalls/${op}`, format: significant, pick: (j, r) => r.perf?.per?.syscalls },
    { label: `futex/${op}`, format: significant, pick: (j, r) => r.perf?.per?.futex },
    { label: `recv+read/${op}`, format: significant, pick: (j, r) => r.perf?.per?.recv },
    { label: `send+write/${op}`, format: significant, pick: (j, r) => r.perf?.per?.send },
    { label: `epoll_wait/${op}`, format: significant, pick: (j, r) => r.perf?.per?.epoll_wait },
    { label: `context switches/${op}`, format: significant, pick: (j, r) => r.perf?.per?.context_switches },
];
const perfOp = { append: "append", fanout: "delivery", longpoll: "delivery", catchup: "MB" };

// Per scenario; the first column is the headline, listed per run below the tables.
const columnsFor = {
    append: [
        { label: "appends/s", ratio: "appends/s", format: thousands, pick: (j) => j.appends_per_s },
        { label: "p50 ms", ratio: "p50", digits: 2, pick: (j) => ms(j.latency_us?.p50) },
        { label: "p99 ms", ratio: "p99", digits: 2, pick: (j) => ms(j.latency_us?.p99) },
        ...serverColumns("append"),
        { label: "errors", sum: true, pick: (j) => (j.errors ?? 0) + (j.transport_errors ?? 0) },
        generatorColumn,
    ],
    fanout: deliveryColumns,
    longpoll: deliveryColumns,
    catchup: [
        { label: "MB/s (all readers)", ratio: "MB/s", digits: 1, pick: (j) => j.aggregate_mb_per_s },
        { label: "MB/s per reader (median)", digits: 1, pick: (j) => j.reader_mb_per_s?.median },
        { label: "first byte p50 ms", ratio: "first byte p50", digits: 2, pick: (j) => ms(j.ttfb_us?.p50) },
        { label: "request p99 ms", digits: 2, pick: (j) => ms(j.latency_us?.p99) },
        ...serverColumns("mb"),
        { label: "bad reads", sum: true, pick: (j) => j.mismatches + j.incomplete_reads + j.errors },
        generatorColumn,
    ],
};

const scenario = rows.find((r) => r.result)?.result.scenario ?? "append";
if (!columnsFor[scenario]) {
    console.error(`compare-table: no columns for scenario '${scenario}'`);
    process.exit(2);
}
const columns = rows.some((r) => "perf" in r)
    ? [...columnsFor[scenario], ...perfColumns(perfOp[scenario])]
    : columnsFor[scenario];
const headline = columns[0];
const show = (c, x) => (c.format ? c.format(x) : fmt(x, c.digits));

const stats = new Map();
for (const name of order) {
    const runs = byServer.get(name);
    const ok = runs.filter((r) => r.result);
    stats.set(name, {
        runs: runs.length,
        failed: runs.filter((r) => r.rc !== 0 || !r.result).length,
        values: columns.map((c) =>
            c.sum ? ok.reduce((a, r) => a + (c.pick(r.result, r) ?? 0), 0) : median(ok.map((r) => c.pick(r.result, r))),
        ),
        perRun: runs.map((r) => (r.result ? show(headline, headline.pick(r.result)) : `failed (rc ${r.rc})`)),
    });
}

const out = [];
out.push(`| server | runs | ${columns.map((c) => c.label).join(" | ")} |`);
out.push(`|---|---:|${columns.map(() => "---:").join("|")}|`);
for (const name of order) {
    const s = stats.get(name);
    const runs = s.failed ? `${s.runs} (${s.failed} failed)` : `${s.runs}`;
    out.push(`| ${name} | ${runs} | ${columns.map((c, i) => show(c, s.values[i])).join(" | ")} |`);
}

const ratios = [
    ["dstream-durable", "reference-file"],
    ["dstream-durable", "reference-memory"],
    ["dstream-memory", "reference-memory"],
    ["dstream-s3", "dstream-durable"],
    ["dstream-memory", "nginx-floor"],
    ["dstream-durable", "nginx-floor"],
    ["dstream-memory", "fanout-floor"],
    ["dstream-durable", "fanout-floor"],
].filter(([a, b]) => stats.has(a) && stats.has(b));
const ratioColumns = columns.map((c, i) => [c, i]).filter(([c]) => c.ratio);
if (ratios.length) {
    out.push("");
    out.push(`| ratio of medians | ${ratioColumns.map(([c]) => c.ratio).join(" | ")} |`);
    out.push(`|---|${ratioColumns.map(() => "---:").join("|")}|`);
    for (const [a, b] of ratios) {
        const x = stats.get(a).values;
        const y = stats.get(b).values;
        out.push(`| ${a} / ${b} | ${ratioColumns.map(([, i]) => times(x[i], y[i])).join(" | ")} |`);
    }
    out.push("");
    out.push(`Ratios above 1 are better for ${headline.ratio} and worse for the other columns.`);

    // The host's speed moves between rounds, so each round's ratio to the
    // server beside it in that round says more than the medians alone.
    const cpu = columns.find((c) => c.ratio?.startsWith("server CPU"));
    const inRound = (name, round) => byServer.get(name).find((r) => r.round === round && r.result);
    const rounds = [...new Set(rows.map((r) => r.round))].sort((x, y) => x - y);
    const perRound = (a, b, c) =>
        rounds
            .map((n) => {
                const x = inRound(a, n);
                const y = inRound(b, n);
                return x && y ? times(c.pick(x.result, x), c.pick(y.result, y)) : "n/a";
            })
            .join(", ");
    if (rounds.length > 1) {
        out.push("");
        out.push("Round by round (each server beside the other in the same round):");
        out.push("");
        for (const [a, b] of ratios) {
            const c = b.endsWith("-floor") && cpu ? cpu : headline;
            out.push(`- ${a} / ${b}, ${c.ratio}: ${perRound(a, b, c)}`);
        }
    }
}

out.push("");
out.push(`Per-run ${headline.label} (in run order):`);
out.push("");
for (const name of order) out.push(`- ${name}: ${stats.get(name).perRun.join(", ")}`);

// bench/load/cpu_speed.h: the CPUs' speeds just before each run.
if (rows.some((r) => r.cpu_speed)) {
    const spread = (r) => {
        const c = r.cpu_speed;
        return c ? `${c.chase_slowest_over_fastest.toFixed(2)}/${c.store_slowest_over_fastest.toFixed(2)}` : "n/a";
    };
    out.push("");
    out.push(
        "Slowest CPU's time over the fastest's just before each run (`dstream-bench cpu-speed`, " +
            "dependent loads / store-and-add steps; 1 is even):",
    );
    out.push("");
    for (const name of order) out.push(`- ${name}: ${byServer.get(name).map(spread).join(", ")}`);
}

const samples = rows.flatMap((r) => (r.result?.error_samples ?? []).map((m) => `${r.server} round ${r.round}: ${m}`));
if (samples.length) {
    out.push("");
    out.push("Error samples:");
    out.push("");
    for (const m of samples.slice(0, 20)) out.push(`- ${m}`);
}
console.log(out.join("\n"));
