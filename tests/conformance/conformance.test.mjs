// Runs the upstream Durable Streams server conformance suite against the
// server at $DSTREAM_URL (run.sh starts build/dstream and sets it). With
// DSTREAM_FOLLOW_REDIRECTS=1 (a cluster's node) the suite's fetch follows
// redirects with any body (follow_redirects.mjs).
import { runConformanceTests } from "@durable-streams/server-conformance-tests";
import { Agent, setGlobalDispatcher } from "undici";
import { followRedirects } from "./follow_redirects.mjs";

if (process.env.DSTREAM_FOLLOW_REDIRECTS === "1") followRedirects();
// DSTREAM_HTTP2=1: Node's fetch offers h2 by ALPN (an https URL), through
// the undici of the same version as Node's own (package.json).
if (process.env.DSTREAM_HTTP2 === "1") setGlobalDispatcher(new Agent({ allowH2: true }));

const baseUrl = process.env.DSTREAM_URL;
if (!baseUrl) {
    throw new Error(
        "DSTREAM_URL is not set: start a server and set DSTREAM_URL=http://127.0.0.1:PORT, " +
            "or run `bash tests/conformance/run.sh build/dstream memory`",
    );
}

runConformanceTests({ baseUrl });
