#!/bin/sh
# run.sh - build the libFuzzer targets with clang and fuzz each for a while.
#
#   FUZZ_SECONDS=30 tests/fuzz/run.sh      (seconds per target, default 30)
#
# Builds into build-fuzz/ at the top of the repository (CMake + Ninja,
# CC=clang, -DMS_FUZZ=ON). Each target runs on a copy of its seed corpus in a
# temporary directory, so what the fuzzer learns never grows the repository.
# A crashing input is kept in build-fuzz/artifacts/ for reproduction:
#   build-fuzz/fuzz_scenario build-fuzz/artifacts/crash-...
# Prints one line per target and a final "N passed, N failed"; exits non-zero
# when any target crashed, timed out, ran out of memory or failed to build.
set -u

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
build="${FUZZ_BUILD_DIR:-$root/build-fuzz}"
seconds="${FUZZ_SECONDS:-30}"
# Every tests/fuzz/fuzz_NAME.c is a target, with corpus/NAME/ and NAME.dict.
targets=$(cd "$here" && ls fuzz_*.c | sed 's/\.c$//' | tr '\n' ' ')
ntargets=$(echo $targets | wc -w)

work=$(mktemp -d "${TMPDIR:-/tmp}/meshscaler-fuzz.XXXXXX")
trap 'rm -rf "$work"' EXIT INT TERM

if ! CC=clang cmake -S "$root" -B "$build" -G Ninja -DCMAKE_BUILD_TYPE=Release \
        -DMS_FUZZ=ON >"$work/cmake.log" 2>&1; then
    cat "$work/cmake.log" >&2
    echo "fuzz: cmake failed" >&2
    echo "0 passed, $ntargets failed"
    exit 1
fi
# Only the fuzz targets: the rest of the tree is tested by the normal builds.
if ! ninja -C "$build" $targets >&2; then
    echo "fuzz: build failed" >&2
    echo "0 passed, $ntargets failed"
    exit 1
fi
mkdir -p "$build/artifacts"

passed=0
failed=0
for t in $targets; do
    name=${t#fuzz_}
    mkdir -p "$work/$name"
    cp "$here/corpus/$name/"* "$work/$name/"
    log="$work/$t.log"
    # Scenarios are a few kilobytes; let inputs grow past libFuzzer's
    # default guess taken from the seeds.
    maxlen=""
    [ "$t" = fuzz_scenario ] && maxlen="-max_len=16384"
    # Sidecar answers: past the parser's 4 KiB line cap, so it is reached.
    [ "$t" = fuzz_scrape ] && maxlen="-max_len=16384"
    "$build/$t" "$work/$name" -dict="$here/$name.dict" \
        -max_total_time="$seconds" -rss_limit_mb=2048 -timeout=10 $maxlen \
        -print_final_stats=1 -artifact_prefix="$build/artifacts/" >"$log" 2>&1
    rc=$?
    runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)
    secs=$(sed -n 's/^Done [0-9]* runs in \([0-9]*\) second.*/\1/p' "$log" | tail -n 1)
    runs=${runs:-0}
    if [ "$rc" -eq 0 ]; then
        passed=$((passed + 1))
        rate=""
        [ -n "$secs" ] && [ "$secs" -gt 0 ] && rate=" in ${secs}s, $((runs / secs)) runs/s,"
        echo "$t: $runs runs,$rate no crash"
    else
        failed=$((failed + 1))
        echo "$t: FAILED after $runs runs (exit $rc); log follows" >&2
        tail -n 60 "$log" >&2
        echo "$t: $runs runs, CRASH (exit $rc), input in $build/artifacts/"
    fi
done
echo "$passed passed, $failed failed"
[ "$failed" -eq 0 ]
