// Under CI (the environment variable CI set: CI runs `CI=true bash .ci/run`)
// a test that needs a tool, a privilege or a build product this machine
// lacks fails instead of skipping: CI must not pass on checks it never made.
// Elsewhere such a test is skipped, saying why.
//
//   const why = b3sumMissing();                         // a string, or null when present
//   test('...', { skip: skipUnlessCi(why) }, () => { requireUnderCi(why); ... });

// CI=0, CI=false or an empty CI count as unset.
export const underCi = !/^(|0|false|no)$/i.test(process.env.CI ?? '');

// The `skip` option of a test that needs what `missing` describes (null when
// nothing is missing): the reason outside CI, false (run) under CI.
export function skipUnlessCi(missing) {
    if (!missing) return false;
    return underCi ? false : `${missing} (skipped; under CI this fails)`;
}

// Fails the running test when something it needs is missing (under CI, where
// skipUnlessCi did not skip it).
export function requireUnderCi(missing) {
    if (missing) throw new Error(`${missing}, and CI is set: this test must run, so it fails`);
}
