// Operator routes under /__ursula/ (issue "Operability": health and readiness).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer } from './lib/server.mjs';

let srv;
before(async () => { srv = await startServer({ memory: false }); });
after(async () => { await srv.stop(); });

for (const [route, status] of [['health', 'live'], ['ready', 'ready']]) {
    test(`operator: GET /__ursula/${route} answers 200 {"status":"${status}"} with no-store`, async () => {
        const res = await fetch(`${srv.url}/__ursula/${route}`);
        assert.equal(res.status, 200);
        assert.equal(res.headers.get('cache-control'), 'no-store');
        assert.deepEqual(await res.json(), { status });
        assert.equal(res.headers.get('ursula-protocol'), '2');
        const head = await fetch(`${srv.url}/__ursula/${route}`, { method: 'HEAD' });
        assert.equal(head.status, 200);
    });
}

test('operator: other methods and unknown operator routes answer 404 and create nothing', async () => {
    assert.equal((await fetch(`${srv.url}/__ursula/health`, { method: 'POST', body: 'x' })).status, 404);
    const res = await fetch(`${srv.url}/__ursula/nothing`);
    assert.equal(res.status, 404);
    assert.equal((await res.json()).error.code, 'NOT_FOUND');
});
