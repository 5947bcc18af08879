// Prints the failed tests of a vitest JSON report, one line each with the
// first line of its error, so a log kept as its head and tail names them.
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
const firstLine = (text) => (text ?? '').split('\n').find((l) => l.trim() !== '')?.trim() ?? '';
for (const file of report.testResults.filter((f) => f.status === 'failed' && f.assertionResults.length === 0)) {
    console.error(`conformance: FAILED file ${file.name}: ${firstLine(file.message)}`);
}
// The first few: a log's tail keeps a handful of lines.
const shown = 8;
for (const t of failed.slice(0, shown)) {
    console.error(`conformance: FAILED ${t.fullName}: ${firstLine(t.failureMessages?.[0]).slice(0, 300)}`);
}
if (failed.length > shown) console.error(`conformance: and ${failed.length - shown} more failed`);
console.error(`conformance: ${failed.length} failed of ${report.numTotalTests}`);
