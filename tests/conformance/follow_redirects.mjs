// A client of a cluster follows a 307 or 308 to the node it names with the
// same method, headers and body (RFC 9110 15.4.8, extensions 5.7). Node's
// fetch follows by itself only a body it can send twice: a Uint8Array body
// is detached by its first send, and the redirected request fails. Installed,
// this fetch follows redirects itself, sending a fresh copy of the body on
// each hop; every other request goes to Node's fetch unchanged.
const maxHops = 5;

function replayableBody(body) {
    if (body == null || typeof body === 'string') return () => body;
    if (body instanceof ArrayBuffer || ArrayBuffer.isView(body)) {
        const view = body instanceof ArrayBuffer
            ? new Uint8Array(body)
            : new Uint8Array(body.buffer, body.byteOffset, body.byteLength);
        const kept = Buffer.from(view);  // a copy, before any send detaches the original
        return () => Buffer.from(kept);
    }
    return null;  // a stream or a form: sent once, by Node's own redirect handling
}

export function followRedirects() {
    const nodeFetch = globalThis.fetch;
    globalThis.fetch = async (input, init = {}) => {
        const follows = init.redirect === undefined || init.redirect === 'follow';
        const bodyOf = replayableBody(init.body);
        if (!follows || bodyOf === null || input instanceof Request) return nodeFetch(input, init);
        let url = String(input);
        for (let hop = 0; ; hop++) {
            const res = await nodeFetch(url, { ...init, body: bodyOf(), redirect: 'manual' });
            const location = res.headers.get('location');
            if ((res.status !== 307 && res.status !== 308) || !location || hop === maxHops) return res;
            await res.arrayBuffer().catch(() => {});
            url = new URL(location, url).toString();
        }
    };
}
