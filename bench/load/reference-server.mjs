#!/usr/bin/env node
// Starts the reference Durable Streams server (@durable-streams/server, the
// Node.js implementation) for benchmarks.
//
//   node bench/load/reference-server.mjs --port PORT [--host 127.0.0.1]
//        [--data-dir DIR] [--max-file-handles N] [--modules DIR]
//
// Without --data-dir the server keeps streams in memory; with it, it uses the
// file-backed store (log files + LMDB, fdatasync on append). The package is
// loaded from --modules (default: tests/conformance/node_modules of this
// repository, which `npm ci` in tests/conformance installs at the pinned
// version). Prints "ready URL" once listening; stops on SIGTERM/SIGINT.
//
// --max-file-handles N (file-backed only) swaps in a FileBackedStreamStore
// with an N-entry file-handle pool. As shipped the pool holds 100 handles and
// TestServerOptions cannot change it; with more streams than that appended to
// at once, a handle can be evicted between an append's write and its fsync,
// and the append fails with "Cannot fsync: handle not found", which the
// server maps to 404 "Stream not found".
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { readFileSync } from "node:fs";
import { parseArgs } from "node:util";

const here = dirname(fileURLToPath(import.meta.url));
const { values } = parseArgs({
    options: {
        port: { type: "string" },
        host: { type: "string", default: "127.0.0.1" },
        "data-dir": { type: "string" },
        "max-file-handles": { type: "string" },
        modules: { type: "string", default: join(here, "..", "..", "tests", "conformance", "node_modules") },
    },
});
if (!values.port || !/^\d+$/.test(values.port)) {
    console.error(
        "usage: reference-server.mjs --port PORT [--host H] [--data-dir DIR] [--max-file-handles N] [--modules DIR]",
    );
    process.exit(2);
}
const maxFileHandles = values["max-file-handles"];
if (maxFileHandles !== undefined && (!/^[1-9]\d*$/.test(maxFileHandles) || !values["data-dir"])) {
    console.error("reference-server: --max-file-handles takes a positive integer and needs --data-dir");
    process.exit(2);
}

// Resolve the package's ESM entry from its own package.json ("exports"."."."import").
const require = createRequire(join(resolve(values.modules), "..", "package.json"));
let pkgJsonPath;
try {
    pkgJsonPath = require.resolve("@durable-streams/server/package.json");
} catch {
    console.error(
        `reference-server: @durable-streams/server is not installed under ${values.modules} ` +
            "(run `npm ci` in tests/conformance)",
    );
    process.exit(1);
}
const pkg = JSON.parse(readFileSync(pkgJsonPath, "utf8"));
const entry = pkg.exports?.["."]?.import?.default ?? pkg.module ?? pkg.main;
const { DurableStreamTestServer, FileBackedStreamStore } = await import(
    pathToFileURL(join(dirname(pkgJsonPath), entry)).href
);

const options = { port: Number(values.port), host: values.host };
let server;
let mode = "in-memory";
if (values["data-dir"] && maxFileHandles !== undefined) {
    // Built in memory, then given the file-backed store (start() wires the
    // store into the subscription manager, so this must happen before it).
    server = new DurableStreamTestServer(options);
    server.store = new FileBackedStreamStore({
        dataDir: resolve(values["data-dir"]),
        maxFileHandles: Number(maxFileHandles),
    });
    mode = `file-backed, ${maxFileHandles} file handles`;
} else {
    if (values["data-dir"]) {
        options.dataDir = resolve(values["data-dir"]);
        mode = "file-backed";
    }
    server = new DurableStreamTestServer(options);
}
const url = await server.start();
console.log(`ready ${url} ${pkg.name}@${pkg.version} ${mode}`);

let stopping = false;
const stop = async (signal) => {
    if (stopping) return;
    stopping = true;
    // Do not hang on open keep-alive connections: give stop() 5 s.
    const timer = setTimeout(() => process.exit(0), 5000);
    timer.unref();
    try {
        await server.stop();
    } catch (err) {
        console.error(`reference-server: stop after ${signal}: ${err}`);
    }
    process.exit(0);
};
process.on("SIGTERM", () => stop("SIGTERM"));
process.on("SIGINT", () => stop("SIGINT"));
