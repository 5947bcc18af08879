import { defineConfig } from "vitest/config";

// One test file holds the whole upstream suite (~320 tests). Most tests are
// sequential within the file; the TTL group uses test.concurrent. Long-poll
// tests wait for the server's long-poll timeout, so the server under test
// should use a short one.
export default defineConfig({
    test: {
        include: ["conformance.test.mjs"],
        watch: false,
        reporters: ["default"],
        testTimeout: 30_000,
        hookTimeout: 30_000,
        teardownTimeout: 10_000,
        pool: "threads",
        fileParallelism: false,
        maxWorkers: 1,
        passWithNoTests: false,
        // Do not retry: a flaky conformance test is a server bug to fix.
        retry: 0,
    },
});
