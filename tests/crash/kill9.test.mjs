// Crash test of the durable server: SIGKILL under concurrent idempotent
// producers, restart on the same data dir, verify every acknowledged write
// (the rounds and the checks: lib/crash_rounds.mjs).
//
//   DSTREAM_BIN=build/dstream node --test tests/crash/kill9.test.mjs
//
// Environment: CRASH_ROUNDS (kills, default 20; every one must run),
// CRASH_TIME_BUDGET_MS (no round starts after it, and the test then fails;
// default 300000), CRASH_SEED, CRASH_STREAMS, CRASH_JSON_STREAMS,
// CRASH_PRODUCERS, CRASH_SERVER_ARGS, CRASH_QUIET_EVERY, CRASH_KEEP_DIR=1,
// CRASH_VERBOSE=1.
import { test } from 'node:test';

import { runCrashRounds } from './lib/crash_rounds.mjs';

// The test's own bound follows a longer time budget: every round must run.
const budgetMs = Number(process.env.CRASH_TIME_BUDGET_MS || 300_000);

test('kill -9 under concurrent idempotent producers loses and duplicates nothing',
     { timeout: Math.max(560_000, budgetMs + 260_000) },
     () => runCrashRounds({ name: 'crash_kill9', prefix: 'CRASH' }));
