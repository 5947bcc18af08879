// Preloaded (node --import) by http_suite.sh --h2: Node's fetch offers h2 by
// ALPN on every https URL, through the undici of tests/conformance (the
// version of Node's own), so that the suite's requests are HTTP/2.
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(path.join(here, '../conformance/package.json'));
const { Agent, setGlobalDispatcher } = require('undici');

const fresh = () => setGlobalDispatcher(new Agent({ allowH2: true }));
fresh();
// lib/server.mjs calls this when a server restarts on its port: undici's
// HTTP/2 client hangs a request on the session of a killed server.
globalThis[Symbol.for('dstream.test.forgetConnections')] = fresh;
