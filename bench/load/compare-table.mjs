#!/usr/bin/env node
// Summarises bench/compare.sh results as markdown: medians per server and the
// dstream / reference ratios.
//
//   node bench/load/compare-table.mjs RESULTS.jsonl
//
// Each line of RESULTS.jsonl: {"server":NAME,"round":N,"rc":EXIT,"result":<dstream-bench JSON or null>}.
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
const thousands = (x) => (Number.isFinite(x) ? Math.round(x).toLocaleString("en-US") : "n/a");

const stats = new Map();
for (const name of order) {
    const runs = byServer.get(name);
    const ok = runs.filter((r) => r.result);
    const pick = (f) => median(ok.map((r) => f(r.result)));
    stats.set(name, {
        runs: runs.length,
        failed: runs.filter((r) => r.rc !== 0 || !r.result).length,
        rate: pick((j) => j.appends_per_s),
        p50: pick((j) => j.latency_us?.p50 / 1000),
        p99: pick((j) => j.latency_us?.p99 / 1000),
        cpu: pick((j) => j.server_cpu_us_per_append),
        serverCores: pick((j) => j.server_cpu_cores),
        rss: pick((j) => (j.server_rss_peak_kib ?? NaN) / 1024),
        clientCores: pick((j) => j.client_cpu_cores),
        errors: ok.reduce((a, r) => a + (r.result.errors ?? 0) + (r.result.transport_errors ?? 0), 0),
        perRun: runs.map((r) => (r.result ? thousands(r.result.appends_per_s) : `failed (rc ${r.rc})`)),
    });
}

const out = [];
out.push(
    "| server | runs | appends/s | p50 ms | p99 ms | server CPU µs/append | server CPU cores | server peak RSS MiB | errors | generator CPU cores |",
);
out.push("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|");
for (const name of order) {
    const s = stats.get(name);
    const runs = s.failed ? `${s.runs} (${s.failed} failed)` : `${s.runs}`;
    out.push(
        `| ${name} | ${runs} | ${thousands(s.rate)} | ${fmt(s.p50, 2)} | ${fmt(s.p99, 2)} | ${fmt(s.cpu, 1)} | ` +
            `${fmt(s.serverCores, 2)} | ${fmt(s.rss, 1)} | ${s.errors} | ${fmt(s.clientCores, 2)} |`,
    );
}

const ratios = [
    ["dstream-durable", "reference-file"],
    ["dstream-durable", "reference-memory"],
    ["dstream-memory", "reference-memory"],
].filter(([a, b]) => stats.has(a) && stats.has(b));
if (ratios.length) {
    out.push("");
    out.push("| ratio of medians | appends/s | p50 | p99 | server CPU µs/append | server peak RSS |");
    out.push("|---|---:|---:|---:|---:|---:|");
    const r = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b !== 0 ? `${(a / b).toFixed(2)}x` : "n/a");
    for (const [a, b] of ratios) {
        const x = stats.get(a);
        const y = stats.get(b);
        out.push(
            `| ${a} / ${b} | ${r(x.rate, y.rate)} | ${r(x.p50, y.p50)} | ${r(x.p99, y.p99)} | ${r(x.cpu, y.cpu)} | ${r(x.rss, y.rss)} |`,
        );
    }
    out.push("");
    out.push("Ratios above 1 are better for appends/s and worse for the other columns.");
}

out.push("");
out.push("Per-run appends/s (in run order):");
out.push("");
for (const name of order) out.push(`- ${name}: ${stats.get(name).perRun.join(", ")}`);

const samples = rows.flatMap((r) => (r.result?.error_samples ?? []).map((m) => `${r.server} round ${r.round}: ${m}`));
if (samples.length) {
    out.push("");
    out.push("Error samples:");
    out.push("");
    for (const m of samples.slice(0, 20)) out.push(`- ${m}`);
}
console.log(out.join("\n"));
