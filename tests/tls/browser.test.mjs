// A real browser (Debian's chromium, headless, driven by playwright-core,
// pinned in tests/conformance/package.json): one page opens ten SSE streams
// to one origin. Over HTTPS the browser speaks HTTP/2 and every stream gets
// every append on one connection; the same page over plain HTTP/1.1 shows
// the browser's six connections per origin (four streams get nothing), so
// the first half proves what it claims.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { startServer } from '../http/lib/server.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../conformance/package.json'));
const { chromium } = require('playwright-core');

const browserPath = process.env.CHROMIUM ?? '/usr/bin/chromium';
const certs = mkdtempSync(path.join(os.tmpdir(), 'dstream-browser-'));
execFileSync('bash', [path.join(here, 'make_certs.sh'), certs]);
const ca = readFileSync(path.join(certs, 'ca.pem'));
const streams = 10;
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let browser;
before(async () => {
    assert.ok(existsSync(browserPath), `${browserPath} is missing (scripts/install-deps installs chromium)`);
    browser = await chromium.launch({ executablePath: browserPath, headless: true, args: ['--no-sandbox'] });
});
after(async () => {
    await browser?.close();
    rmSync(certs, { recursive: true, force: true });
});

async function metric(srv, name, labels) {
    const url = `${srv.url}/__ursula/metrics`;
    const text = srv.url.startsWith('https:')
        ? await new Promise((resolve, reject) => {
            import('node:https').then(({ default: https }) => {
                https.get(url, { ca, agent: false }, (res) => {
                    let body = '';
                    res.setEncoding('utf8');
                    res.on('data', (d) => { body += d; });
                    res.on('end', () => resolve(body));
                }).on('error', reject);
            });
        })
        : await (await fetch(url)).text();
    const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
    return line ? Number(line.split(' ')[1]) : 0;
}

// Opens the page on `srv`'s origin with ten EventSources on streams of its
// own, appends three rounds to every stream from the page (a fetch each, on
// the same origin), and returns what each EventSource received after `ms`.
async function tenStreams(srv, prefix, ms) {
    // The test's root is not the system's: the browser is told to accept
    // this server's certificate (the handshake still negotiates ALPN).
    const context = await browser.newContext({ ignoreHTTPSErrors: true });
    const page = await context.newPage();
    try {
        await page.goto(`${srv.url}/__ursula/health`);
        return await page.evaluate(async ({ prefix, streams, ms }) => {
            const got = Array.from({ length: streams }, () => []);
            for (let i = 0; i < streams; i++) {
                await fetch(`/v1/stream/${prefix}-${i}`, { method: 'PUT', headers: { 'Content-Type': 'text/plain' } });
            }
            const sources = [];
            for (let i = 0; i < streams; i++) {
                const es = new EventSource(`/v1/stream/${prefix}-${i}?offset=-1&live=sse`);
                es.addEventListener('data', (e) => got[i].push(e.data));
                sources.push(es);
            }
            await new Promise((r) => setTimeout(r, 500));
            // The appends go on their own connection when the six are taken
            // (a fetch waits for a free one): from a second origin name.
            for (let round = 0; round < 3; round++) {
                for (let i = 0; i < streams; i++) {
                    const target = location.origin.replace('127.0.0.1', 'localhost');
                    await fetch(`${target}/v1/stream/${prefix}-${i}`, {
                        method: 'POST', headers: { 'Content-Type': 'text/plain' }, body: `m${round}-${i}`,
                    });
                }
            }
            await new Promise((r) => setTimeout(r, ms));
            for (const es of sources) es.close();
            return got;
        }, { prefix, streams, ms });
    } finally {
        await context.close();
    }
}

const complete = (got) => got.map((messages, i) => ['m0', 'm1', 'm2'].every((r) => messages.includes(`${r}-${i}`)));

test('HTTP/2: ten SSE streams from one page all receive every append, on one connection', async () => {
    const srv = await startServer({ extraArgs: ['--tls-cert', path.join(certs, 'a.pem'), '--tls-key', path.join(certs, 'a.key')], ca });
    try {
        // The test's own requests (Node's https) are HTTP/1.1: counted
        // before and after the page, one of them the first count's own.
        const h1before = await metric(srv, 'dstream_http_protocol_requests_total', 'version="1.1",tls="true"');
        const got = await tenStreams(srv, 'h2', 2000);
        assert.deepEqual(complete(got), Array(streams).fill(true), JSON.stringify(got));
        assert.ok(await metric(srv, 'dstream_http_protocol_requests_total', 'version="2",tls="true"') >= 2 * streams);
        assert.equal(await metric(srv, 'dstream_http_protocol_requests_total', 'version="1.1",tls="true"'),
                     h1before + 2, 'the browser spoke HTTP/2 only');
    } finally {
        await srv.stop();
    }
});

test('HTTP/1.1: the same page shows the six-connection limit', async () => {
    const srv = await startServer({ extraArgs: [] });
    try {
        const got = await tenStreams(srv, 'h1', 2000);
        const served = complete(got).filter(Boolean).length;
        const silent = got.filter((messages) => messages.length === 0).length;
        assert.equal(served, 6, JSON.stringify(got));
        assert.equal(silent, streams - 6, JSON.stringify(got));
    } finally {
        await srv.stop();
    }
});
