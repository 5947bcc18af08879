#!/usr/bin/env node
// The per-operation system calls of one bench/compare.sh --perf-stat run:
// the counts of `perf stat -x, -p SERVER_PID` (PERF_EVENTS in compare.sh)
// divided by the operations the server did while perf counted.
//
//   node bench/load/perf-counts.mjs PERF.csv BENCH.json SECONDS
//   node bench/load/perf-counts.mjs PERF.csv BENCH.json --reads-ended-at S
//
// SECONDS is how long perf counted, inside the measured window. With
// --reads-ended-at (catchup, whose fill is not measured and whose reads
// take no fixed time) the CSV holds intervals (perf stat -I), S is when the
// generator exited, counted from perf's start, and the intervals of the
// last `seconds` (the reads, from the JSON line) before it are summed.
//
// The operations are the JSON line's rate times the seconds counted:
// appends_per_s, deliveries_per_s (fanout, longpoll) or aggregate_mb_per_s
// (catchup, 10^6 bytes). Prints the `perf` object of results.jsonl on one
// line, then a one-line summary; "null" and the reason when there is none.
import { readFileSync } from "node:fs";

const [csvFile, benchFile, third, fourth] = process.argv.slice(2);
if (!csvFile || !benchFile || !third) {
    console.error("usage: perf-counts.mjs PERF.csv BENCH.json SECONDS | --reads-ended-at S");
    process.exit(2);
}
const intervals = third === "--reads-ended-at";

// Which tracepoints make up each figure.
const groups = {
    futex: ["syscalls:sys_enter_futex"],
    recv: ["syscalls:sys_enter_recvfrom", "syscalls:sys_enter_recvmsg", "syscalls:sys_enter_read"],
    send: [
        "syscalls:sys_enter_sendto",
        "syscalls:sys_enter_sendmsg",
        "syscalls:sys_enter_write",
        "syscalls:sys_enter_writev",
        "syscalls:sys_enter_sendfile64",
    ],
    epoll_wait: ["syscalls:sys_enter_epoll_wait", "syscalls:sys_enter_epoll_pwait", "syscalls:sys_enter_epoll_pwait2"],
    context_switches: ["context-switches"],
    syscalls: ["raw_syscalls:sys_enter"],
};
const opFor = {
    append: ["append", "appends_per_s"],
    fanout: ["delivery", "deliveries_per_s"],
    longpoll: ["delivery", "deliveries_per_s"],
    catchup: ["mb", "aggregate_mb_per_s"],
};

const give_up = (why) => {
    console.log("null");
    console.log(`perf: ${why}`);
    process.exit(0);
};

const bench = readFileSync(benchFile, "utf8")
    .split("\n")
    .find((l) => l.startsWith('{"scenario"'));
if (!bench) give_up("no result line from the generator");
const result = JSON.parse(bench);
const [op, rateField] = opFor[result.scenario] ?? give_up(`no operation for scenario '${result.scenario}'`);

// -x, rows: [TIME,]COUNT,UNIT,EVENT,...; "<not counted>" when the server
// did not run in that interval.
const csv = (() => {
    try {
        return readFileSync(csvFile, "utf8");
    } catch {
        return give_up("perf stat wrote no counts (see perf.err beside the run)");
    }
})();
let rows = csv
    .split("\n")
    .filter((l) => l.trim() !== "" && !l.startsWith("#"))
    .map((l) => l.split(","))
    .map((f) => (intervals ? { at: Number(f[0]), count: f[1], event: f[3] } : { count: f[0], event: f[2] }));
if (rows.length === 0) give_up("perf stat wrote no counts (see perf.err beside the run)");

let seconds = Number(third);
if (intervals) {
    // Each row's time is the end of its interval; the reads are the last
    // `seconds` before the generator exited (the report after them is short).
    const endedAt = Number(fourth);
    const times = [...new Set(rows.map((r) => r.at))].sort((a, b) => a - b);
    const from = endedAt - result.seconds;
    let kept = times.filter((t, i) => t > from && (i === 0 || times[i - 1] < endedAt));
    if (kept.length === 0) kept = times.slice(-1);
    const first = times.indexOf(kept[0]);
    seconds = kept[kept.length - 1] - (first > 0 ? times[first - 1] : 0);
    rows = rows.filter((r) => kept.includes(r.at));
}

const counts = {};
for (const [name, events] of Object.entries(groups)) {
    counts[name] = rows
        .filter((r) => events.includes(r.event))
        .reduce((a, r) => a + (/^[0-9]+$/.test(r.count) ? Number(r.count) : 0), 0);
}
const ops = result[rateField] * seconds;
if (!(ops > 0)) give_up(`${rateField} is ${result[rateField]}: no operations to divide by`);
const per = Object.fromEntries(Object.entries(counts).map(([k, v]) => [k, Number((v / ops).toPrecision(4))]));

// The timed scenarios' load starts after set-up (and, fanout and longpoll,
// the readers' connections); perf started warm-up + 0.5 s after launch.
const loadStart = (result.setup_s ?? 0) + (result.ready_s ?? 0);
const early = !intervals && loadStart > (result.warmup_s ?? 0) + 0.5;

console.log(JSON.stringify({ seconds: Number(seconds.toFixed(3)), op, operations: Math.round(ops), counts, per }));
console.log(
    `perf: ${per.syscalls} syscalls/${op} (futex ${per.futex}, recv ${per.recv}, send ${per.send}, ` +
        `epoll_wait ${per.epoll_wait}), ${per.context_switches} context switches/${op} over ${seconds.toFixed(2)} s` +
        (early ? ` (set-up took ${loadStart.toFixed(2)} s: perf began before the load)` : ""),
);
