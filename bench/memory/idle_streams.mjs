// Memory per stream: creates N streams of 1 KiB each (default 10,000) and
// prints the server's RSS before and after, from /proc/PID/status.
//
//   node bench/memory/idle_streams.mjs URL SERVER_PID [N]
import { readFileSync } from 'node:fs';
const [url, pid, n = '10000'] = process.argv.slice(2);
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
const hwm = () => Number(/VmHWM:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
const before = rss();
const body = 'x'.repeat(1024);
let next = 0;
async function worker() {
  while (next < Number(n)) {
    const i = next++;
    const r = await fetch(`${url}/v1/stream/mem-${i}`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body });
    if (r.status !== 201) throw new Error('create ' + r.status);
    await r.arrayBuffer();
  }
}
await Promise.all(Array.from({ length: 32 }, worker));
await new Promise((r) => setTimeout(r, 1000));
console.log(JSON.stringify({ streams: Number(n), rss_before_kib: before, rss_after_kib: rss(), hwm_kib: hwm() }));
