// Deadlines for the waits of the tests. A wait that does not end fails its
// test within a bound, naming what it waited for, instead of hanging until
// the runner's or ctest's timeout (which names nothing).
//
//   const code = await within(child.exited, 5000, 'dstream tail exits after the close');
//   await until(() => seen.length >= 3, 2000, 'three events');

export class DeadlineError extends Error {
    constructor(what, ms) {
        super(`timed out after ${ms} ms waiting for ${what}`);
        this.name = 'DeadlineError';
    }
}

// Resolves (or rejects) as `promise` does, if it settles within `ms`;
// otherwise rejects with a DeadlineError naming `what`. `what` may be a
// function, called at the deadline, for a message with the state then.
export function within(promise, ms, what) {
    let timer;
    const deadline = new Promise((_, reject) => {
        timer = setTimeout(() => {
            reject(new DeadlineError(typeof what === 'function' ? what() : what, ms));
        }, ms);
    });
    return Promise.race([Promise.resolve(promise), deadline]).finally(() => clearTimeout(timer));
}

// Polls `pred` every `everyMs` until it returns a truthy value (returned),
// failing with a DeadlineError naming `what` after `ms`.
export async function until(pred, ms, what, everyMs = 20) {
    const deadline = Date.now() + ms;
    for (;;) {
        const v = await pred();
        if (v) return v;
        if (Date.now() >= deadline) {
            throw new DeadlineError(typeof what === 'function' ? what() : what, ms);
        }
        await new Promise((r) => setTimeout(r, everyMs));
    }
}

