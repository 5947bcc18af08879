#!/usr/bin/env bash
# Runs one libFuzzer target for a while: first every input of its corpus (the
# seeds and regression inputs, and what earlier runs kept), then new inputs
# until the time is up; then keeps what it found.
#
#   fuzz/run.sh BINARY CORPUS_DIR SECONDS WORK_DIR
#
# New inputs the fuzzer finds go to WORK_DIR/corpus during the run. After a
# run without a crash, those that reach code CORPUS_DIR does not are merged
# into CORPUS_DIR (libFuzzer -set_cover_merge=1: a small set of them covering
# as much; files named by their SHA-1), so the corpus in the repository grows
# with every `make fuzz`: commit them. FUZZ_MERGE=0 (the ctest runs of
# `make test`) leaves CORPUS_DIR alone; WORK_DIR/corpus keeps the finds then.
# A crash is saved in WORK_DIR/artifacts and fails the run. A missing binary
# exits 77, which ctest reports as skipped; under CI (the environment
# variable CI set) it fails the run instead.
set -euo pipefail

if [[ $# -ne 4 ]]; then
    echo "usage: $0 BINARY CORPUS_DIR SECONDS WORK_DIR" >&2
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
echo "fuzzing $(basename "$binary") for ${seconds} s; corpus in $seeds, new inputs in $work/corpus"
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
    exit $status
fi

if [[ ${FUZZ_MERGE:-1} != 0 ]]; then
    before=$(find "$seeds" -maxdepth 1 -type f | wc -l)
    if ! "$binary" -set_cover_merge=1 -timeout=10 -rss_limit_mb=2048 -error_exitcode=1 -timeout_exitcode=1 \
            -artifact_prefix="$work/artifacts/" \
            "$seeds" "$work/corpus" >"$work/merge.log" 2>&1; then
        tail -n 20 "$work/merge.log" >&2
        echo "FAILED: merging the new inputs into $seeds (log: $work/merge.log)" >&2
        exit 1
    fi
    after=$(find "$seeds" -maxdepth 1 -type f | wc -l)
    echo "kept $((after - before)) new inputs in $seeds ($after in all)"
fi
