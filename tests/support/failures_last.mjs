// A node:test reporter: Node's spec reporter, then one line per failed test
// with the first lines of its error. ctest's log of a failed run may be kept
// as its head and tail only; the spec reporter's own list of failures ends
// in stack frames and error properties, which push the message out of the tail.
//
//   node --test --test-reporter=PATH/failures_last.mjs FILE...
import { spec as SpecReporter } from 'node:test/reporters';

// The first lines of a failure: the message, and for an assertion its
// expected and actual values.
function summary(error) {
    const cause = error?.cause ?? error;
    const text = cause instanceof Error ? `${cause.name}: ${cause.message}` : String(cause);
    return text.split('\n').map((l) => l.trim()).filter((l) => l !== '').slice(0, 3).join(' | ').slice(0, 400);
}

export default async function* failuresLast(source) {
    const spec = new SpecReporter();
    const failed = [];
    const feeding = (async () => {
        for await (const event of source) {
            // A suite fails with its tests; only the tests that failed are named.
            if (event.type === 'test:fail' && event.data.details?.type !== 'suite') {
                const where = event.data.file ? `${event.data.file.split('/').pop()}: ` : '';
                failed.push(`${where}${event.data.name}: ${summary(event.data.details?.error)}`);
            }
            spec.write(event);
        }
        spec.end();
    })();
    for await (const chunk of spec) yield chunk;
    await feeding;
    if (failed.length === 0) return;
    const shown = 8;
    for (const line of failed.slice(0, shown)) yield `FAILED ${line}\n`;
    if (failed.length > shown) yield `and ${failed.length - shown} more failed\n`;
}
