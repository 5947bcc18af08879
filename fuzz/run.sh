#!/usr/bin/env bash
# Runs one libFuzzer target for a while: first every seed of its corpus (the
# regression inputs), then new inputs until the time is up.
#
#   fuzz/run.sh BINARY SEED_DIR SECONDS WORK_DIR
#
# New inputs the fuzzer finds go to WORK_DIR/corpus (the seeds in the repository
# are only read); a crash is saved in WORK_DIR/artifacts and fails the run. A
# missing binary exits 77, which ctest reports as skipped; under CI (the
# environment variable CI set) it fails the run instead.
set -euo pipefail

if [[ $# -ne 4 ]]; then
    echo "usage: $0 BINARY SEED_DIR SECONDS WORK_DIR" >&2
    exit 2
fi
binary=$1 seeds=$2 seconds=$3 work=$4

if [[ ! -x $binary ]]; then
    if command -v clang++ >/dev/null 2>&1; then
        why="it is not built: run 'make fuzz-build' (cmake --preset fuzz && cmake --build --preset fuzz)"
    else
        why="clang++ is not installed (scripts/install-deps installs it), so the fuzz targets cannot be built"
    fi
    if [[ -n "${CI:-}" && ! "${CI,,}" =~ ^(0|false|no)$ ]]; then
        echo "FAILED: $binary: $why; CI is set, so the fuzz targets must be built and run" >&2
        exit 1
    fi
    echo "SKIPPED: $binary: $why"
    exit 77
fi

mkdir -p "$work/corpus" "$work/artifacts"
# A smaller ASan quarantine than the 256 MiB default: two targets run side by
# side under ctest -j2 next to the other tests (about 150 MiB each instead of 500).
export ASAN_OPTIONS="quarantine_size_mb=32:${ASAN_OPTIONS:-}"
echo "fuzzing $(basename "$binary") for ${seconds} s; seeds in $seeds, new inputs in $work/corpus"
# -timeout: one input taking 10 s is a hang; -rss_limit_mb: a leak or an
# allocation the input controls.
# -error_exitcode=1: libFuzzer's default for a crash is 77, which ctest would
# report as a skip (SKIP_RETURN_CODE 77), not as the failure it is.
status=0
"$binary" -max_total_time="$seconds" -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
    -error_exitcode=1 -timeout_exitcode=1 \
    -artifact_prefix="$work/artifacts/" "$work/corpus" "$seeds" || status=$?
if [[ $status -ne 0 ]]; then
    echo "FAILED: the input that broke it is in $work/artifacts/; add it to $seeds once fixed" >&2
    [[ $status -eq 77 ]] && status=1  # never a skip
fi
exit $status
