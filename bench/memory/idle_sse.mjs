// Memory per idle live reader: opens M SSE subscribers (default 1000) on one
// stream from offset=now and prints how much the server's RSS grew.
//
//   node bench/memory/idle_sse.mjs URL SERVER_PID [M]
import { readFileSync } from 'node:fs';
import http from 'node:http';
const [url, pid, m = '1000'] = process.argv.slice(2);
const rss = () => Number(/VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'))[1]);
await (await fetch(`${url}/v1/stream/sse-mem`, { method: 'PUT', headers: { 'content-type': 'text/plain' }, body: 'hello' })).arrayBuffer();
const before = rss();
const agent = new http.Agent({ keepAlive: false, maxSockets: Infinity });
const u = new URL(`${url}/v1/stream/sse-mem?offset=now&live=sse`);
let open = 0;
const reqs = [];
await Promise.all(Array.from({ length: Number(m) }, () => new Promise((resolve, reject) => {
  const req = http.get({ host: u.hostname, port: u.port, path: u.pathname + u.search, agent }, (res) => {
    if (res.statusCode !== 200) reject(new Error('status ' + res.statusCode));
    res.once('data', () => { open++; resolve(); });
  });
  req.on('error', reject);
  reqs.push(req);
})));
await new Promise((r) => setTimeout(r, 1500));
const after = rss();
console.log(JSON.stringify({ subscribers: open, rss_before_kib: before, rss_after_kib: after, added_kib: after - before }));
for (const r of reqs) r.destroy();
process.exit(0);
