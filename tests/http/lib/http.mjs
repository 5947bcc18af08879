// Helpers shared by the black-box tests: unique names, error-body checks,
// a raw HTTP/1.1 connection for cases fetch cannot express, and an SSE reader.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import net from 'node:net';
import tls from 'node:tls';

let counter = 0;
// A unique stream name: the runner may run files in parallel, each with its
// own server, but names stay unique inside one file too.
export function uniq(prefix = 's') {
    counter += 1;
    return `${prefix}-${process.pid}-${Date.now().toString(36)}-${counter}`;
}

// The offset token as a number. dstream offsets are stored byte positions
// (20 zero-padded digits), which is what the tests about byte counting check.
export function offsetNum(token) {
    assert.match(token ?? '', /^\d{20}$/, `offset token ${token} is not 20 digits`);
    return Number(BigInt(token));
}

export const utf8len = (s) => Buffer.byteLength(s, 'utf8');

// Checks an error answer of extensions Section 11: status, Content-Type
// application/json and {"error":{"code","message"}} with the expected code.
// Returns the parsed body (null for HEAD).
export async function expectError(res, status, code, { head = false } = {}) {
    const text = head ? '' : await res.text();
    assert.equal(res.status, status, `expected ${status} ${code}, got ${res.status}: ${text}`);
    assert.match(res.headers.get('content-type') ?? '', /^application\/json\b/,
                 `error answer Content-Type: ${res.headers.get('content-type')}`);
    if (head) return null;
    let body;
    try {
        body = JSON.parse(text);
    } catch {
        assert.fail(`error body is not JSON: ${JSON.stringify(text)}`);
    }
    assert.equal(typeof body, 'object');
    assert.equal(typeof body.error, 'object', `error body has no error object: ${text}`);
    assert.equal(body.error.code, code, `error code: ${text}`);
    assert.match(body.error.code, /^[A-Z_]+$/);
    assert.equal(typeof body.error.message, 'string', `error.message must be a string: ${text}`);
    return body;
}

// Reads a stream's tail and content for "nothing was committed" checks.
export async function snapshot(url) {
    const head = await fetch(url, { method: 'HEAD' });
    const next = head.headers.get('stream-next-offset');
    const closed = head.headers.get('stream-closed');
    const res = await fetch(url + '?offset=-1');
    const body = Buffer.from(await res.arrayBuffer());
    return { status: head.status, next, closed, body: body.toString('base64') };
}

// ---------------------------------------------------------------------------
// Raw HTTP/1.1 over node:net.

// Parses one HTTP/1.x response at the start of `buf`. Returns null when more
// bytes are needed, else {status, reason, version, headers (lower-case keys,
// repeated headers joined with ", "), rawHeaders, body (Buffer), length}.
// `noBody`: the answer to a HEAD (or a 1xx/204/304) carries no body.
export function parseResponse(buf, { noBody = false, untilClose = false } = {}) {
    const end = buf.indexOf('\r\n\r\n');
    if (end < 0) return null;
    const headText = buf.subarray(0, end).toString('latin1');
    const lines = headText.split('\r\n');
    const m = /^(HTTP\/\d\.\d) (\d{3})(?: (.*))?$/.exec(lines[0]);
    if (!m) throw new Error(`bad status line: ${JSON.stringify(lines[0])}`);
    const headers = {};
    for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        const name = line.slice(0, colon).trim().toLowerCase();
        const value = line.slice(colon + 1).trim();
        headers[name] = name in headers ? `${headers[name]}, ${value}` : value;
    }
    const status = Number(m[2]);
    const base = { version: m[1], status, reason: m[3] ?? '', headers, rawHeaders: headText };
    let pos = end + 4;
    if (noBody || (status >= 100 && status < 200) || status === 204 || status === 304) {
        return { ...base, body: Buffer.alloc(0), length: pos };
    }
    if (/\bchunked\b/i.test(headers['transfer-encoding'] ?? '')) {
        const parts = [];
        while (true) {
            const lineEnd = buf.indexOf('\r\n', pos);
            if (lineEnd < 0) return null;
            const size = parseInt(buf.subarray(pos, lineEnd).toString('latin1'), 16);
            pos = lineEnd + 2;
            if (size === 0) {
                const trailerEnd = buf.indexOf('\r\n', pos);
                if (trailerEnd < 0) return null;
                pos = trailerEnd + 2;
                break;
            }
            if (buf.length < pos + size + 2) return null;
            parts.push(buf.subarray(pos, pos + size));
            pos += size + 2;
        }
        return { ...base, body: Buffer.concat(parts), length: pos };
    }
    if ('content-length' in headers) {
        const n = Number(headers['content-length']);
        if (buf.length < pos + n) return null;
        return { ...base, body: buf.subarray(pos, pos + n), length: pos + n };
    }
    // No framing: the body runs to the end of the connection.
    if (!untilClose) return { ...base, body: Buffer.alloc(0), length: pos, unframed: true };
    return null;
}

// A raw connection to a test server: TCP, or TLS offering HTTP/1.1 only
// when the suite runs over HTTPS (DSTREAM_TEST_TLS_DIR, lib/server.mjs).
export function rawConnect({ port, host = '127.0.0.1' }, onConnect) {
    const dir = process.env.DSTREAM_TEST_TLS_DIR;
    if (!dir) return net.connect({ port, host }, onConnect);
    // TLS over a TCP socket of our own, which an abortive close resets (a
    // TLS socket has no resetAndDestroy of its own).
    const tcp = net.connect({ port, host });
    const socket = tls.connect({ socket: tcp, ca: readFileSync(`${dir}/ca.pem`), ALPNProtocols: ['http/1.1'] },
                               onConnect);
    socket.resetAndDestroy = () => {
        tcp.resetAndDestroy();
        socket.destroy();
        return socket;
    };
    return socket;
}

// One raw connection (rawConnect) with a receive buffer.
export class RawConn {
    static async open(port, host = '127.0.0.1') {
        const c = new RawConn();
        await new Promise((resolve, reject) => {
            c.socket = rawConnect({ port, host }, resolve);
            c.socket.once('error', reject);
        });
        c.socket.on('error', (e) => { c.error = e; });
        return c;
    }

    constructor() {
        this.buf = Buffer.alloc(0);
        this.closed = false;
        this.error = null;
        this.waiters = new Set();
    }

    set socket(s) {
        this._socket = s;
        s.on('data', (d) => {
            this.buf = Buffer.concat([this.buf, d]);
            this.notify();
        });
        s.on('close', () => {
            this.closed = true;
            this.notify();
        });
    }
    get socket() { return this._socket; }

    notify() {
        for (const w of [...this.waiters]) w();
    }

    write(data) {
        return new Promise((resolve, reject) => {
            this.socket.write(data, (err) => (err ? reject(err) : resolve()));
        });
    }

    // Waits until `pred()` is true, the connection closes, or `ms` passes.
    // Returns pred()'s last value.
    waitFor(pred, ms = 5000) {
        return new Promise((resolve) => {
            const check = () => {
                const v = pred();
                if (v || this.closed) {
                    clearTimeout(timer);
                    this.waiters.delete(check);
                    resolve(v);
                }
            };
            const timer = setTimeout(() => {
                this.waiters.delete(check);
                resolve(pred());
            }, ms);
            this.waiters.add(check);
            check();
        });
    }

    // Reads the next complete response from the buffer (consuming it).
    async readResponse({ noBody = false, ms = 5000 } = {}) {
        let parsed = null;
        await this.waitFor(() => (parsed = parseResponse(this.buf, { noBody })) !== null, ms);
        if (!parsed) {
            throw new Error(`no complete response within ${ms} ms (closed=${this.closed}); ` +
                            `buffered: ${JSON.stringify(this.buf.toString('latin1').slice(0, 300))}`);
        }
        this.buf = this.buf.subarray(parsed.length);
        return parsed;
    }

    // Resolves true when the peer closes the connection within `ms`.
    async waitClosed(ms = 5000) {
        await this.waitFor(() => this.closed, ms);
        return this.closed;
    }

    destroy() {
        this.socket.destroy();
    }
}

// A request's bytes. `body` may be a string or Buffer; Content-Length is added
// unless `headers` has one or a Transfer-Encoding, or `noLength` is set.
export function rawRequest(method, target, { headers = {}, body = null, host = 'localhost',
                                             noLength = false, version = 'HTTP/1.1' } = {}) {
    const lines = [`${method} ${target} ${version}`, `Host: ${host}`];
    const names = Object.keys(headers).map((k) => k.toLowerCase());
    for (const [k, v] of Object.entries(headers)) lines.push(`${k}: ${v}`);
    const bodyBuf = body === null ? Buffer.alloc(0) : Buffer.from(body);
    if (!noLength && !names.includes('content-length') && !names.includes('transfer-encoding') &&
        (body !== null || method === 'POST' || method === 'PUT')) {
        lines.push(`Content-Length: ${bodyBuf.length}`);
    }
    return Buffer.concat([Buffer.from(lines.join('\r\n') + '\r\n\r\n', 'latin1'), bodyBuf]);
}

// ---------------------------------------------------------------------------
// SSE.

// Reads SSE events from a fetch Response until `done(events)` is true or the
// stream ends or `ms` passes; aborts the request afterwards. Events follow the
// WHATWG parsing rules: data lines joined with LF, one leading space of a
// field value removed. Returns {events, raw} (raw: the bytes as text).
export async function readSse(res, { done = () => false, ms = 5000, controller = null } = {}) {
    const reader = res.body.getReader();
    const decoder = new TextDecoder();
    let raw = '';
    const pieces = [];  // of the line not ended yet
    let afterCr = false;
    const events = [];
    let current = { event: 'message', dataLines: [] , hasData: false };
    const feedLine = (line) => {
        if (line === '') {
            if (current.hasData) {
                events.push({ event: current.event, data: current.dataLines.join('\n') });
            }
            current = { event: 'message', dataLines: [], hasData: false };
            return;
        }
        if (line.startsWith(':')) return;
        const colon = line.indexOf(':');
        const field = colon < 0 ? line : line.slice(0, colon);
        let value = colon < 0 ? '' : line.slice(colon + 1);
        if (value.startsWith(' ')) value = value.slice(1);
        if (field === 'event') current.event = value;
        else if (field === 'data') {
            current.dataLines.push(value);
            current.hasData = true;
        }
    };
    const deadline = Date.now() + ms;
    let ended = false;
    try {
        while (!done(events)) {
            const left = deadline - Date.now();
            if (left <= 0) break;
            let timer;
            const timeout = new Promise((r) => { timer = setTimeout(() => r({ timeout: true }), left); });
            const chunk = await Promise.race([reader.read(), timeout]);
            clearTimeout(timer);
            if (chunk.timeout) break;
            if (chunk.done) {
                ended = true;
                break;
            }
            const text = decoder.decode(chunk.value, { stream: true });
            raw += text;
            // Only the new text is searched for line ends, and a line's
            // pieces are joined once it ends: a line of many MiB (a reader's
            // catch-up event) arrives in thousands of chunks.
            const lineEnd = /\r\n|\n|\r/g;
            let from = 0;
            if (afterCr && text.startsWith('\n')) from = 1;  // the LF of a CRLF split between chunks
            afterCr = false;
            while (true) {
                const m = lineEnd.exec(text);
                if (!m) break;
                if (m.index < from) continue;
                pieces.push(text.slice(from, m.index));
                feedLine(pieces.join(''));
                pieces.length = 0;
                from = m.index + m[0].length;
                afterCr = m[0] === '\r' && from === text.length;
            }
            if (from < text.length) pieces.push(text.slice(from));
        }
    } finally {
        if (controller) controller.abort();
        reader.cancel().catch(() => {});
    }
    return { events, raw, ended };
}

// Opens an SSE read; returns {res, read(opts)} where read() consumes events.
export async function openSse(url, { headers = {} } = {}) {
    const controller = new AbortController();
    const res = await fetch(url, { headers, signal: controller.signal });
    return {
        res,
        controller,
        read: (opts = {}) => readSse(res, { ...opts, controller }),
    };
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
