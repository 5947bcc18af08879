// Prints the failed tests of a vitest JSON report, one line each with the
// first lines of its error, so a log kept as its head and tail names them.
//
//   node failed_tests.mjs RESULTS.json
import { readFileSync } from 'node:fs';

let report;
try {
    report = JSON.parse(readFileSync(process.argv[2], 'utf8'));
} catch (err) {
    console.error(`conformance: no test report to summarise (${err.message})`);
    process.exit(0);
}
const failed = report.testResults.flatMap((file) =>
    file.assertionResults.filter((t) => t.status === 'failed'));
// A property test's message names its seed and counterexample on the lines
// after the first: the first three, joined.
const firstLines = (text) =>
    (text ?? '').split('\n').map((l) => l.trim()).filter((l) => l !== '').slice(0, 3).join(' | ');
for (const file of report.testResults.filter((f) => f.status === 'failed' && f.assertionResults.length === 0)) {
    console.error(`conformance: FAILED file ${file.name}: ${firstLines(file.message)}`);
}
// The first few: a log's tail keeps a handful of lines.
const shown = 8;
for (const t of failed.slice(0, shown)) {
    console.error(`conformance: FAILED ${t.fullName}: ${firstLines(t.failureMessages?.[0]).slice(0, 400)}`);
}
if (failed.length > shown) console.error(`conformance: and ${failed.length - shown} more failed`);
console.error(`conformance: ${failed.length} failed of ${report.numTotalTests}`);
